"""The docs hold together and stay short (issue 68): every relative link in the markdown points at a file and
heading that exist; every `docs/<file>.md` that the code's comments and strings, or the docs themselves, name
exists, with the section they quote; each file keeps to its length; and every section a bench/ script writes is
one docs/benchmarks.md holds. No model, no network."""
from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMITS = {"README.md": 160, "docs/architecture.md": 400}   # lines; any other .md under docs/: DOCS_LIMIT
DOCS_LIMIT = 600
CODE = ["feat_engine/**/*.py", "app/**/*.py", "bench/**/*.py", "tests/**/*.py", "scripts/**/*.sh", ".ci/*"]

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
LINK = re.compile(r"\]\(\s*<?([^()\s<>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_ATTR = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.I)
HTML_ID = re.compile(r"<a\b[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
MARKER = re.compile(r"<!--\s*([\w.-]+):start\s*-->")
# docs/<path>.md, then optionally its sections: `, "A"`, `("A")`, `"A"`, each further one after `and` or `,`
REF = re.compile(r'(?<![\w./-])docs/((?:[\w.-]+/)*[\w.-]+\.md)(?![\w/-]|\.\w)'
                 r'(?:(?:\s*,\s*|\s*\(\s*|\s*)"([^"]+)"((?:\s*(?:,|and)\s*"[^"]+")*))?')
MORE = re.compile(r'"([^"]+)"')


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def markdown_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "assets").glob("*.md")),
             *sorted((ROOT / "docs").rglob("*.md"))]
    return [f for f in files if f.is_file()]


def code_files() -> list[Path]:
    out = {p for g in CODE for p in ROOT.glob(g) if p.is_file() and p.resolve() != Path(__file__).resolve()}
    return sorted(p for p in out if p.suffix in (".py", ".sh") or p.parent.name == ".ci")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a markdown text outside fenced code blocks, inline code spans blanked out."""
    out, fence = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        out.append((n, line))
    return out


def without_code_spans(line: str) -> str:
    return re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def heading_text(raw: str) -> str:
    """What a heading shows: link and image syntax, code ticks, emphasis and HTML tags taken away."""
    t = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", t)
    t = re.sub(r"<[^>]+>", "", t)
    t = t.replace("`", "")
    t = re.sub(r"(\*\*|__|\*|~~)(.+?)\1", r"\2", t)
    t = re.sub(r"(?<![\w])_(.+?)_(?![\w])", r"\1", t)
    return t.strip()


def slug(text: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lowercase; keep letters, marks, decimal and letter numbers,
    '_', '-' and spaces; spaces become '-'."""
    keep = [c for c in text.lower() if c in " -" or unicodedata.category(c)[0] in "LM"
            or unicodedata.category(c) in ("Nd", "Nl", "Pc")]
    return "".join(keep).replace(" ", "-")


def headings(path: Path) -> list[str]:
    """The text of every ATX heading of a markdown file, in order."""
    return _headings(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _headings(path: Path, _mtime: int) -> list[str]:
    return [heading_text(m.group(2)) for _, line in prose_lines(path.read_text()) if (m := HEADING.match(line))]


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in headings(path):
        s = slug(h)
        k = seen.get(s, 0)
        out.add(s if k == 0 else f"{s}-{k}")
        seen[s] = k + 1
    return out | {m.group(1) for _, line in prose_lines(path.read_text()) for m in HTML_ID.finditer(line)}


def markers(path: Path) -> set[str]:
    """The section markers of a markdown file (`<!-- name:start -->`), outside code."""
    return {m for _, line in prose_lines(path.read_text()) for m in MARKER.findall(without_code_spans(line))}


def _norm(s: str) -> str:
    return " ".join(s.replace("`", "").split()).casefold()


def names_section(title: str, path: Path) -> bool:
    """`title` names a heading of `path`: the whole heading, or its start followed by ':', '(', ',', ';' or a
    dash ("The views" names "The views: the additive model or boosted trees"). In docs/benchmarks.md the name of
    a section's markers ("scaling-e2e") names that section too."""
    t = _norm(title)
    for h in map(_norm, headings(path)):
        if h == t or (h.startswith(t) and h[len(t):].lstrip()[:1] in (":", "(", ",", ";", "-", "–", "—")):
            return True
    return path.name == "benchmarks.md" and title.strip() in markers(path)


# -- (a) links in the markdown ------------------------------------------------------------------------------

def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every inline link, image, HTML href/src and link definition (which starts a paragraph)."""
    out, blank = [], True
    for n, line in prose_lines(path.read_text()):
        line = without_code_spans(line)
        out += [(n, m.group(1)) for m in LINK.finditer(line)]
        out += [(n, m.group(1)) for m in HTML_ATTR.finditer(line)]
        if blank and (m := REF_DEF.match(line)):
            out.append((n, m.group(1)))
        blank = not line.strip()
    return out


def broken_link(source: Path, target: str) -> str | None:
    """Why a link of `source` is broken, or None. URLs (a scheme, or //host) are not checked."""
    if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return None
    path, _, anchor = target.partition("#")
    path = unquote(path.split("?")[0])
    dest = source if not path else (ROOT / path.lstrip("/") if path.startswith("/") else source.parent / path)
    if not dest.exists():
        return "no such file"
    if ROOT.resolve() not in (dest.resolve(), *dest.resolve().parents):
        return "outside the repository"
    if anchor and dest.suffix == ".md" and unquote(anchor) not in anchors(dest):
        return f"no heading with the anchor #{anchor} in {_rel(dest)}"
    return None


def test_every_relative_link_in_the_docs_points_at_a_file_and_heading_that_exist():
    bad = [f"{_rel(f)}:{n}: ({t}): {why}" for f in markdown_files() for n, t in links(f)
           if (why := broken_link(f, t))]
    assert not bad, "broken links:\n" + "\n".join(bad)


# -- (b) docs/<file>.md references in the code and in the docs ---------------------------------------------------

def _python_texts(path: Path) -> list[tuple[str, list[tuple[int, str]]]]:
    """A Python file's comments and string literals as blocks of (line, text): consecutive comment lines form one
    block (joined with spaces), and so do adjacent string literals (joined as Python concatenates them)."""
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    last_comment, strings, fstring = -2, None, None
    fs_start, fs_mid, fs_end = (getattr(tokenize, k, None) for k in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END"))
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        line = tok.start[0]
        if fstring is not None:                                  # Python 3.12+: an f-string comes in pieces
            if tok.type == fs_mid:
                fstring[1] += tok.string
            elif tok.type == fs_end:
                strings = (strings or []) + [(fstring[0], _unescape(fstring[1]))]
                fstring = None
            continue
        if fs_start is not None and tok.type == fs_start:
            fstring = [line, ""]
            continue
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):                    # an f-string before Python 3.12
                body = re.sub(r"^[a-zA-Z]*", "", tok.string)
                q = 3 if body[:3] in ('"""', "'''") else 1
                value = _unescape(body[q:-q])
            if not isinstance(value, bytes):
                strings = (strings or []) + [(line, value)]
            continue
        if strings is not None and tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue                                              # the next literal may sit on the next line
        if strings is not None:
            blocks.append(("string", strings))
            strings = None
        if tok.type == tokenize.COMMENT:
            text = (line, tok.string.lstrip("#").strip())
            if line == last_comment + 1 and blocks and blocks[-1][0] == "comment":
                blocks[-1][1].append(text)
            else:
                blocks.append(("comment", [text]))
            last_comment = line
    if strings is not None:
        blocks.append(("string", strings))
    return blocks


def _unescape(s: str) -> str:
    return s.replace('\\"', '"').replace("\\'", "'")


def _shell_texts(path: Path) -> list[tuple[str, list[tuple[int, str]]]]:
    """A shell script's comments (from a '#' at the line's start or after a blank), consecutive lines as one block."""
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    last = -2
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = re.search(r"(?:^|\s)#(?!!)(.*)$", line)
        if not m:
            continue
        if n == last + 1:
            blocks[-1][1].append((n, m.group(1).strip()))
        else:
            blocks.append(("comment", [(n, m.group(1).strip())]))
        last = n
    return blocks


def _markdown_texts(path: Path) -> list[tuple[str, list[tuple[int, str]]]]:
    """A markdown file's lines (its code blocks too: a comment there cites the docs as the code does), consecutive
    non-blank lines as one block."""
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    last = -2
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        if n == last + 1:
            blocks[-1][1].append((n, line))
        else:
            blocks.append(("text", [(n, line)]))
        last = n
    return blocks


def references(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, 'docs/...md', [quoted section titles]) for each reference in a file's comments and strings (code) or
    text (markdown). A reference may wrap: onto a comment's next line, or into the next string literal."""
    if "docs/" not in path.read_text():
        return []
    blocks = (_markdown_texts(path) if path.suffix == ".md" else _python_texts(path) if path.suffix == ".py"
              else _shell_texts(path))
    out = []
    for kind, pieces in blocks:
        text, starts = "", []
        for n, piece in pieces:
            if starts and kind != "string":
                text += " "
            starts.append((len(text), n))
            text += piece
        for m in REF.finditer(text):
            pos, n = max((pos, n) for pos, n in starts if pos <= m.start())
            line = n + text[pos:m.start()].count("\n")          # a docstring spans lines
            titles = ([m.group(2)] if m.group(2) else []) + MORE.findall(m.group(3) or "")
            out.append((line, "docs/" + m.group(1), [" ".join(t.split()) for t in titles]))
    return out


def broken_references(path: Path) -> list[str]:
    bad = []
    for n, ref, titles in references(path):
        target = ROOT / ref
        if not target.is_file():
            bad.append(f"{_rel(path)}:{n}: {ref}: no such file")
            continue
        bad += [f'{_rel(path)}:{n}: {ref}, "{t}": no such section (heading) in {ref}'
                for t in titles if not names_section(t, target)]
    return bad


def test_every_docs_reference_in_the_code_names_a_file_and_section_that_exist():
    bad = [b for f in code_files() for b in broken_references(f)]
    assert not bad, "broken references to the docs:\n" + "\n".join(bad)


def test_every_docs_reference_in_the_docs_names_a_file_and_section_that_exist():
    bad = [b for f in markdown_files() for b in broken_references(f)]
    assert not bad, "broken references to the docs:\n" + "\n".join(bad)


# -- (c) lengths ------------------------------------------------------------------------------------------------

def test_each_doc_keeps_to_its_length():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    long = []
    for f in files:
        limit = LIMITS.get(_rel(f), DOCS_LIMIT)
        if f.is_file() and (n := len(f.read_text().splitlines())) > limit:
            long.append(f"{_rel(f)}: {n} lines, the limit is {limit}")
    assert not long, "too long:\n" + "\n".join(long)


# -- (d) the sections the bench scripts write --------------------------------------------------------------------

# sections a script in bench/ writes that docs/benchmarks.md does not hold (a run appends them), and why
NOT_IN_BENCHMARKS = {"context-size-global": "context_size.py --local-context none: a line of context-size, by hand",
                     "large-context": "large_context.py: a 1M-row context before the reading budget (decision 0005); "
                                      "the app's walk and large-tables measure today's"}
# sections of docs/benchmarks.md that no script writes: comparisons of runs, put together by hand
BY_HAND = {"quality-local-auto", "issue-66-kernel", "imputation-long"}
SECTION_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")


def bench_sections() -> dict[str, str]:
    """{section: script} for each section name a script in bench/ spells out: the `section` given to
    `add_common_args`, the first argument of `finish` or `write_section`, a string assigned to `section` or
    `args.section`, and the values of a `SECTIONS` dict."""
    out = {}
    for path in sorted((ROOT / "bench").glob("*.py")):
        names = []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if func == "add_common_args":
                    names += [k.value for k in node.keywords if k.arg == "section"] + node.args[1:2]
                elif func in ("finish", "write_section"):
                    names += node.args[:1]
            elif isinstance(node, ast.Assign):
                targets = [t.id if isinstance(t, ast.Name) else getattr(t, "attr", "") for t in node.targets]
                if "section" in targets:
                    names += [c for c in ast.walk(node.value) if isinstance(c, ast.Constant)]
                elif "SECTIONS" in targets and isinstance(node.value, ast.Dict):
                    names += node.value.values
        out.update({c.value: _rel(path) for c in names if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    and SECTION_NAME.match(c.value)})
    return out


def test_the_bench_scripts_write_the_sections_that_docs_benchmarks_holds():
    """A script's run replaces its section of docs/benchmarks.md; a section name the file lacks would be appended at
    its end instead, and a section no script writes, nor a person, is left over."""
    written, held = bench_sections(), markers(ROOT / "docs" / "benchmarks.md")
    assert {"quality", "quality-bar", "scaling-e2e", "relations-er"} <= set(written), "the scan found too little"
    missing = [f"{script} writes the section {name!r}: no <!-- {name}:start --> in docs/benchmarks.md"
               for name, script in sorted(written.items()) if name not in held and name not in NOT_IN_BENCHMARKS]
    missing += [f"docs/benchmarks.md holds {name!r}, which no bench/ script writes (add it to BY_HAND if a person "
                "does)" for name in sorted(held - set(written) - BY_HAND)]
    missing += [f"NOT_IN_BENCHMARKS names {name!r}: " + ("docs/benchmarks.md holds it now" if name in held else
                                                        "no script writes it") for name in NOT_IN_BENCHMARKS
                if name in held or name not in written]
    missing += [f"BY_HAND names {name!r}, which docs/benchmarks.md does not hold" for name in BY_HAND - held]
    assert not missing, "\n".join(missing)


# -- the checks themselves ----------------------------------------------------------------------------------------

def test_slugs_follow_github():
    assert slug(heading_text("Zero-shot quality (issue-3 bar settings)")) == "zero-shot-quality-issue-3-bar-settings"
    assert slug(heading_text("What `fit` and `predict` do")) == "what-fit-and-predict-do"
    assert slug(heading_text("Mean R² — by table")) == "mean-r--by-table"
    assert slug(heading_text("Choosing the reading on the context (`local_context=\"auto\"`)")) == \
        "choosing-the-reading-on-the-context-local_contextauto"


def test_the_checks_catch_what_they_should(tmp_path, monkeypatch):
    """A broken link, a missing anchor, a missing file and a missing section are each reported with file and line;
    a reference that wraps across comment lines or string literals is read whole."""
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## The views: two of them\n\n## Large tables\n")
    (tmp_path / "docs" / "benchmarks.md").write_text("# B\n<!-- scaling-e2e:start -->\n## End to end\n"
                                                     "<!-- scaling-e2e:end -->\n")
    md = tmp_path / "README.md"
    md.write_text("[ok](docs/a.md#the-views-two-of-them) [gone](docs/b.md) [no](docs/a.md#nothing)\n"
                  "```\n[in code](nowhere.md)\n```\n`[in a span](nowhere.md)`\n")
    bad = [(n, t, broken_link(md, t)) for n, t in links(md) if broken_link(md, t)]
    assert [(n, t) for n, t, _ in bad] == [(1, "docs/b.md"), (1, "docs/a.md#nothing")]
    src = tmp_path / "x.py"
    d = "docs"
    src.write_text(f'"""See {d}/a.md, "The views" and "Large\n    tables"."""\n'
                   f'X = 1  # measured ({d}/a.md,\n       # "Large tables"); {d}/a.md ("Small tables")\n'
                   f'H = ("... ({d}/a.md, \\"Large "\n     "tables\\") ..."'
                   f' f"{{X}} ({d}/benchmarks.md, \\"scaling-e2e\\")")\n'
                   f'# {d}/gone.md and {d}/benchmarks.md, "End to end", "scaling"\n')
    got = references(src)
    assert [(n, r, t) for n, r, t in got] == [
        (1, f"{d}/a.md", ["The views", "Large tables"]), (3, f"{d}/a.md", ["Large tables"]),
        (4, f"{d}/a.md", ["Small tables"]), (5, f"{d}/a.md", ["Large tables"]),
        (6, f"{d}/benchmarks.md", ["scaling-e2e"]), (7, f"{d}/gone.md", []),
        (7, f"{d}/benchmarks.md", ["End to end", "scaling"])]
    assert broken_references(src) == [f'x.py:4: {d}/a.md, "Small tables": no such section (heading) in {d}/a.md',
                                      f"x.py:7: {d}/gone.md: no such file",
                                      f'x.py:7: {d}/benchmarks.md, "scaling": no such section (heading) in '
                                      f'{d}/benchmarks.md']
