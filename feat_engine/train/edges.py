"""Train the edge head (model/edge_head.py) on the prior's causal graphs, the backbone frozen.

    python -m feat_engine.train.edges tokens --out DIR --start 910000000 --tables 900   # one worker's share
    python -m feat_engine.train.edges fit --cache DIR --out assets/feat-small-edges.pt

`tokens` writes prior tables' column tokens, edges and pair statistics, one .npz per table (`write_tokens`;
run one worker per core with disjoint seed ranges), and `fit` trains the head on those files (`fit_head`).
Seeds 555,000,000 + ... are the relations benchmark's, 930,000,000 + ... the prototype's validation tables:
keep both out of `--start` (docs/decisions/0033-edge-head.md).
"""
from __future__ import annotations

import argparse
import glob
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..checkpoint import DEFAULT_CHECKPOINT, load_checkpoint, save_edge_head
from ..model import FEAT
from ..model.edge_head import DEPTHS, EdgeHead
from ..preprocess import TablePreprocessor
from ..prior.scm import sample_scm
from ..relations.correlations import pair_statistics

KEEP_ROWS = 256


def table_tokens(model: FEAT, seed: int, rows: int, d: int, missing: float,
                 keep: np.random.Generator) -> dict[str, np.ndarray] | None:
    """One prior table's column tokens (len(DEPTHS), n, D, E) at up to KEEP_ROWS rows, its pair statistics
    (D, D, N_STATS) and its edges (None when fewer than 3 columns survive the preprocessing)."""
    t = sample_scm(np.random.default_rng(seed), rows, d, "regression", p_missing=missing)
    df = pd.DataFrame(t.X, columns=[f"c{j}" for j in range(d)])
    pre = TablePreprocessor().fit(df)
    cols = np.array([int(n[1:]) for n in pre.feature_names_])
    if len(cols) < 3:
        return None
    z = pre.transform(df)
    x = torch.as_tensor(z, dtype=torch.float32)[None]
    with torch.no_grad():
        hs = model.column_tokens(x, model.column_ids(1, len(cols), seed=seed), DEPTHS)
    sub = np.sort(keep.permutation(x.shape[1])[:KEEP_ROWS])
    return {"H": np.stack([h[0, sub].numpy() for h in hs]).astype(np.float16), "S": pair_statistics(z),
            "edges": t.edges[np.ix_(cols, cols)]}


def write_tokens(out: str | Path, start: int, n_tables: int, checkpoint: str | Path = DEFAULT_CHECKPOINT) -> None:
    """Tables start .. start + n_tables - 1 as .npz files in `out`: prior tables (`sample_scm`, seeds start + i;
    sizes from seed start + 10,000,000 + i: 3-24 features, 256-1,024 rows, missing values in half), encoded as
    the estimators do, each with its column tokens at `DEPTHS` for up to KEEP_ROWS of its rows (fp16), its edges
    among the observed features and the pair statistics of all its rows (`relations.correlations.pair_statistics`, as
    `edge_matrix` computes them)."""
    model, _ = load_checkpoint(checkpoint)
    Path(out).mkdir(parents=True, exist_ok=True)
    keep, t0 = np.random.default_rng(start), time.time()
    for i in range(n_tables):
        size = np.random.default_rng(start + 10_000_000 + i)
        d, rows = int(size.integers(3, 25)), int(size.integers(256, 1025))
        item = table_tokens(model, start + i, rows, d, 0.5 if size.uniform() < 0.5 else 0.0, keep)
        if item is not None:
            np.savez(Path(out) / f"{start + i}.npz", **item)
        if (i + 1) % 100 == 0:
            print(f"{i + 1}/{n_tables} tables, {time.time() - t0:.0f} s", flush=True)


def fit_head(cache: str | Path, epochs: int = 12, batch: int = 16, lr: float = 2e-3, log=print) -> EdgeHead:
    """Train an edge head on the token files of `cache`: batches of `batch` tables, binary cross-entropy on
    every off-diagonal pair (an edge in either direction), AdamW with a cosine schedule, seed 0."""
    files = sorted(glob.glob(str(Path(cache) / "*.npz")))
    if not files:
        raise FileNotFoundError(f"{cache}: no token files (.npz); write them with `tokens` first")
    tables = [dict(np.load(f)) for f in files]
    torch.manual_seed(0)
    head = EdgeHead(tables[0]["H"].shape[-1])          # the backbone's token width
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(1, epochs * len(tables) // batch))
    bce = nn.BCEWithLogitsLoss()
    for ep in range(epochs):
        order, total, t0 = np.random.default_rng(ep).permutation(len(tables)), 0.0, time.time()
        for b in range(0, len(order), batch):
            loss = torch.zeros(())
            for i in order[b:b + batch]:
                H, E = tables[i]["H"], tables[i]["edges"]
                truth = torch.as_tensor(E | E.T, dtype=torch.float32)
                z = head(list(torch.as_tensor(H.astype(np.float32))), torch.as_tensor(tables[i]["S"]))
                off = ~torch.eye(len(E), dtype=torch.bool)
                loss = loss + bce(z[off], truth[off])
            opt.zero_grad()
            (loss / batch).backward()
            opt.step()
            sched.step()
            total += float(loss.detach())
        log(f"epoch {ep + 1}/{epochs}: loss {total / len(tables):.4f}, {time.time() - t0:.0f} s")
    return head.eval()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m feat_engine.train.edges", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    t = sub.add_parser("tokens", help="write prior tables' column tokens")
    t.add_argument("--out", required=True)
    t.add_argument("--start", type=int, required=True)
    t.add_argument("--tables", type=int, required=True)
    t.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    f = sub.add_parser("fit", help="train the head on the token files")
    f.add_argument("--cache", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--epochs", type=int, default=12)
    f.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    a = p.parse_args(argv)
    if a.step == "tokens":
        torch.set_num_threads(1)                 # one worker per core
        write_tokens(a.out, a.start, a.tables, a.checkpoint)
    else:
        n = len(glob.glob(str(Path(a.cache) / "*.npz")))
        head = fit_head(a.cache, a.epochs)
        save_edge_head(a.out, head, a.checkpoint, {"tables": n, "epochs": a.epochs, "depths": list(DEPTHS)})


if __name__ == "__main__":
    main()
