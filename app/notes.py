"""What the views say in an analyst's words about FEAT's notes and results (no Streamlit, no model): the engine's
warnings as the page shows them (`note_words`; `shown_notes` puts the columns of one kind of unread value in one box),
a list of columns as a sentence (`columns_text`), the classes a method seldom predicts (`seldom_note`), and the columns
of a masking run that FEAT fills worse than the simplest method (`worse_than`), with why where its fills are values
the column holds and the other's are not (`held_values`)."""
from __future__ import annotations

import ast
import re

import pandas as pd

from .metrics import card_text

# the engine's warnings -> an analyst's words (a display choice: the engine's own stay as the CLI prints them).
# The engine says "context" for the rows it learns from and "query" for the rows it predicts; the app says
# example rows and rows to predict.
_NOTE_WORDS = [
    (re.compile(r"^query column (.+?): (\S+) rows? (holds?) "), r"column \1: \2 of the rows to predict \3 "),
    (re.compile(r"^X column "), "column "),
    (re.compile(r"\ba level the context does not have\b"), "a category that none of the example rows has"),
    (re.compile(r"\bread as missing\b"), "read as empty"),
    (re.compile(r"\bdropped (\S+) context rows? whose target (.+) is missing"),
     r"left out \1 example rows whose target \2 is empty"),
    (re.compile(r"\bdropped near-unique text/ID columns (.+): they cannot generalise"),
     r"left out the columns \1: a different text in almost every row (names, IDs) says nothing about other rows"),
    (re.compile(r"\bdropped constant \(or empty\) columns (.+): they carry no information"),
     r"left out the columns \1: every example row holds the same value there, or none"),
    (re.compile(r"^columns (.+) were dropped \(.+\) and keep their missing cells$"),
     r"the empty cells stay empty in the columns \1, which FEAT leaves out"),
    (re.compile(r"\bquery columns differ from the context's\b"),
     "the columns of the rows to predict differ from the example rows'"),
    (re.compile(r"\bcontext rows\b"), "example rows"),
    (re.compile(r"\bcontext row\b"), "example row"),
    (re.compile(r"\bleave it out: the predictions lean on it"),
     "leave it out (in Data, set its 'use as' to ignore): the predictions lean on it"),
    (re.compile(r"\bquery rows\b"), "rows to predict"),
    (re.compile(r"\bthe context\b(?!')"), "the example rows"),
]


_LISTED = re.compile(r"\bthe columns (\[[^\]]*\])")     # a list of column names as Python writes it


def columns_text(columns: list) -> str:
    """Columns as a sentence names them: "the columns 'a', 'b' and 'c'", "the column 'a'" for one."""
    names = [f"'{name}'" for name in columns]
    if len(names) < 2:
        return f"the column {''.join(names)}"
    return f"the columns {', '.join(names[:-1])} and {names[-1]}"


def _listed(match: re.Match) -> str:
    """"the columns ['a', 'b', 'c']" -> `columns_text`'s sentence."""
    try:
        return columns_text(ast.literal_eval(match.group(1)))
    except (ValueError, SyntaxError):
        return match.group(0)


def note_words(note: str) -> str:
    """One of FEAT's warnings in an analyst's words ("query column 'country': 2 rows hold a level the context does
    not have (e.g. 'Peru'), read as missing" -> "column 'country': 2 of the rows to predict hold a category that
    none of the example rows has (e.g. 'Peru'), read as empty"), lists of columns as a sentence writes them."""
    for pattern, words in _NOTE_WORDS:
        note = pattern.sub(words, note)
    return _LISTED.sub(_listed, note)


# a note on the cells of one column that FEAT reads as empty, in `note_words`' words: column, rows, what, examples
_UNREAD = re.compile(r"^column ('.+'): (\d+) of the rows to predict holds? (.+) \(e\.g\. (.*)\), read as empty$")
_PLURAL = {"a category that none of the example rows has": "categories that no example row has",
           "a value that is not a finite number": "values that are not finite numbers",
           "a value that is not a date": "values that are not dates"}
EXAMPLES_CHARS = 80     # a bullet's examples are cut past this many characters (a free-text column's are sentences)


def shown_notes(notes: list[str]) -> list[str]:
    """FEAT's notes on a run as the page shows them, one box each: in an analyst's words (`note_words`), the notes of
    two or more columns whose rows to predict hold the same kind of value FEAT reads as empty (a category no example
    row has, say) as one note with a bullet per column, where the first of them stood."""
    said = [note_words(n) for n in notes]
    unread = [_UNREAD.match(note) for note in said]
    kinds: dict[str, list[re.Match]] = {}
    for m in filter(None, unread):
        kinds.setdefault(m.group(3), []).append(m)
    out = []
    for note, m in zip(said, unread):
        group = kinds[m.group(3)] if m else []
        if len(group) < 2:
            out.append(note)
        elif m is group[0]:
            what = _PLURAL.get(m.group(3), m.group(3))
            out.append(f"{len(group)} columns of the rows to predict hold {what}, read as empty:\n" + "\n".join(
                f"- {g.group(1)}: {int(g.group(2)):,} row{'s' if g.group(2) != '1' else ''} (e.g. {_cut(g.group(4))})"
                for g in group))
    return out


def _cut(examples: str) -> str:
    """Examples cut after EXAMPLES_CHARS characters."""
    return examples if len(examples) <= EXAMPLES_CHARS else examples[:EXAMPLES_CHARS].rstrip() + "…"


def seldom_note(name: str, seldom: list[tuple], y_true: pd.Series, scores: dict[str, float],
                cut: tuple | None = None) -> str | None:
    """The warning on the classes that `name`'s answers for the held-out rows `y_true` give seldom or never
    (`metrics.seldom_found`'s list), in one box: what it missed, a bullet a class where there are several, then why
    its accuracy (in `scores`, with its balanced accuracy) says little. `cut`: (positive class, cut-off) of a binary
    label, whose note says which way to move the cut-off. None where no class is missed."""
    if not seldom:
        return None
    n_rows, counts = len(y_true), pd.Series(y_true).value_counts()
    move = ""
    if len(seldom) > 1:     # several classes (more than two: no cut-off), a bullet each
        said = f"**{name} seldom or never predicts {len(seldom)} of the classes:**\n" + "".join(
            f"- '{c}': finds {found:,} of its {n:,} held-out rows (recall {card_text(found / n)})\n" if named else
            f"- '{c}': never predicted, though {n:,} held-out rows are '{c}'\n" for c, n, found, named in seldom) + "\n"
    else:
        (cls, n, found, named), at_cut = seldom[0], ""
        if cut:         # the cut-off at the class's share of the rows is the one for the best balanced accuracy
            positive, cutoff = cut
            rate, at_cut = max(0.01, round(n / n_rows, 2)), " at this cut-off"
            move = (f", and try a {'lower' if cls == positive else 'higher'} cut-off for '{positive}' above"
                    + (f": near {rate:g}, the share of '{positive}' rows, counts both classes alike"
                       if cls == positive and rate < cutoff else ""))
        said = (f"**{name} predicts no held-out row as '{cls}'**{at_cut}, though {n:,} of the {n_rows:,} held-out rows "
                f"are '{cls}': it missed every one of them. " if not named else
                f"**{name} finds {found:,} of the {n:,} held-out rows that are '{cls}'**{at_cut} (recall "
                f"{card_text(found / n)}). ")
    return (f"{said}Always answering '{counts.index[0]}', the most common class, would score an accuracy of "
            f"{card_text(counts.iloc[0] / n_rows)} ({name}: {card_text(scores['accuracy'])}), so accuracy says little "
            f"here: read the balanced accuracy ({card_text(scores['balanced accuracy'])}){move}.")


def worse_than(scores: pd.DataFrame, baseline: str = "mean/mode", method: str = "FEAT",
               why: dict | None = None) -> list[str]:
    """The columns of a masking run (`metrics.imputation_scores` rows with a `method` column) where `method` scores
    worse than `baseline`: a higher NRMSE, a lower accuracy; each as "name (accuracy 0.14 against 0.43)", in the
    table's column order, `why[name]` added inside the brackets where given (`held_values`). [] where either method
    is missing."""
    wide = scores.pivot_table(index=["column", "metric"], columns="method", values="value", sort=False)
    if method not in wide or baseline not in wide:
        return []
    out = []
    for (column, metric), row in wide.iterrows():
        ours, theirs = row[method], row[baseline]
        if pd.isna(ours) or pd.isna(theirs):
            continue
        if (ours > theirs) if metric == "NRMSE" else (ours < theirs):
            out.append(f"{column} ({metric} {ours:.2f} against {theirs:.2f}{(why or {}).get(column, '')})")
    return out


def held_values(visible: pd.Series, ours: pd.Series, theirs: pd.Series) -> str:
    """"; FEAT fills only values the column holds, and the average, 1.72, is none of them" for a number column whose
    fills `ours` are each one of its `visible` values (a count, a level) and whose fills `theirs` are none of them:
    the number a score rewards is then one that no row could hold. "" otherwise."""
    held = set(visible.dropna().tolist())
    ours, theirs = ours.dropna(), theirs.dropna()
    if not (pd.api.types.is_numeric_dtype(ours) and pd.api.types.is_numeric_dtype(theirs)) or not len(ours) \
            or not ours.isin(held).all() or theirs.isin(held).any():
        return ""
    one = theirs.unique()
    other = f"the average, {one[0]:.3g}, is" if len(one) == 1 else "the other fills are"
    return f"; FEAT fills only values the column holds, and {other} none of them"
