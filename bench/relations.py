"""Relation discovery on held-out synthetic tables whose DAG is known.

Tables come from the engine's own prior, `feat_engine.prior.scm.sample_scm`, with seeds
555,000,000 + i (far from every training stream), at --rows rows and D in --sizes features.
`SCMTable.edges[i, j]` says feature i is a parent of feature j (edges between observed
features only; hidden nodes are marginalised out). The prior also draws the mechanism family
of each table (mlp, tree, linear or mixed), which the report breaks the results down by.

Each method gives a D x D score matrix A. Edges are scored undirected: a pair {i, j} scores
max(A[i, j], A[j, i]) and is positive when i -> j or j -> i. The score is the ROC-AUC of
ranking the positive pairs above the others, per table (tables with no edge or only edges are
skipped), then averaged.

Methods:
  feat      feat_engine.relation_matrix (feature-axis attention; default n_estimators=2, 1,024 rows)
  feat-dependence  feat_engine.dependence_matrix (masking sensitivity; its defaults: 1,024 rows, 128 queries)
  feat-edges  feat_engine.edge_matrix (the edge head on FEAT's column tokens and each pair's mutual information
            and (partial) correlations; its defaults: 1 member of 1,024 rows). The head was trained on prior
            tables of seeds 910,000,000 + ..., far from these.
  pearson   |Pearson| (pandas, pairwise-complete)
  spearman  |Spearman|
  mi        feat_engine.mutual_information_matrix (scikit-learn's mutual_info_regression of each feature
            on each other, k=3 neighbours, NaN at the column mean, columns standardised)

    python bench/relations.py            # 3 sizes x 40 tables
    python bench/relations.py --quick    # 3 sizes x 8 tables, 512 rows

Writes the "relations" section of docs/benchmarks.md (--out for elsewhere).
"""
from __future__ import annotations

import argparse
import time
import traceback
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pandas as pd

import common as C

METHODS = ["feat", "feat-dependence", "feat-edges", "pearson", "spearman", "mi"]
LABEL = {"feat": "FEAT relation_matrix", "feat-dependence": "FEAT dependence_matrix", "feat-edges": "FEAT edge_matrix", "pearson": "abs(Pearson)", "spearman": "abs(Spearman)", "mi": "mutual information"}
SEED0 = 555_000_000


def table(i: int, d: int, rows: int, missing: float, graphs: str = "prior"):
    """Held-out table i of size d; seed 555,000,000 + 1000 d + i (+ 500 for --graphs er)."""
    from feat_engine.prior.scm import sample_scm

    if graphs == "er":
        return er_table(np.random.default_rng(SEED0 + 1000 * d + 500 + i), rows, d)
    rng = np.random.default_rng(SEED0 + 1000 * d + i)
    return sample_scm(rng, rows, d, "regression", p_missing=missing)


MECHANISMS = {"linear": lambda u: u, "square": lambda u: u ** 2, "sine": lambda u: np.sin(2 * u),
              "abs": np.abs, "step": lambda u: np.sign(u)}


def er_table(rng: np.random.Generator, rows: int, d: int) -> SimpleNamespace:
    """A probe outside the engine's prior: an Erdős–Rényi DAG (each ordered pair an edge with probability
    2 / (d - 1), every node observed), each node a random mechanism (linear, square, sine, abs or step) of a
    random linear mix of its parents plus uniform, Laplace or Gaussian noise at a random scale."""
    edges = np.triu(rng.uniform(size=(d, d)) < 2.0 / max(d - 1, 1), 1)
    X = np.zeros((rows, d))
    names = list(MECHANISMS)
    for j in range(d):
        noise = [rng.uniform(-1, 1, rows), rng.laplace(0, 1, rows), rng.normal(0, 1, rows)][rng.integers(3)]
        pa = np.flatnonzero(edges[:, j])
        if len(pa):
            u = X[:, pa] @ (rng.choice([-1, 1], len(pa)) * rng.uniform(0.5, 1.5, len(pa)))
            f = MECHANISMS[names[rng.integers(len(names))]](u / (u.std() + 1e-12))
            X[:, j] = f / (f.std() + 1e-12) + rng.uniform(0.2, 1.0) * noise
        else:
            X[:, j] = noise
    perm = rng.permutation(d)                        # no column order that follows the graph
    return SimpleNamespace(X=X[:, perm], edges=edges[np.ix_(perm, perm)], mechanism="er")


def scores(method: str, X: pd.DataFrame, args) -> np.ndarray:
    if method in ("pearson", "spearman"):
        return X.corr(method=method).abs().fillna(0.0).to_numpy()
    from feat_engine import dependence_matrix, edge_matrix, mutual_information_matrix, relation_matrix

    if method == "feat":
        R = relation_matrix(X, n_estimators=args.n_estimators, max_rows=args.max_rows_feat, random_state=C.SEED,
                            device=args.device, precision=args.precision, checkpoint=args.checkpoint)
    elif method == "feat-dependence":
        R = dependence_matrix(X, random_state=C.SEED, device=args.device, precision=args.precision,
                              checkpoint=args.checkpoint)
    elif method == "feat-edges":
        R = edge_matrix(X, random_state=C.SEED, device=args.device, precision=args.precision,
                        checkpoint=args.checkpoint)
    elif method == "mi":
        R = mutual_information_matrix(X, random_state=C.SEED)
    else:
        raise ValueError(method)
    # constant columns are dropped by the preprocessing: they score 0
    return R.reindex(index=X.columns, columns=X.columns).fillna(0.0).to_numpy()


def edge_auc(A: np.ndarray, edges: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    S, T = np.maximum(A, A.T), edges | edges.T
    iu = np.triu_indices(len(A), 1)
    t, s = T[iu], S[iu]
    if t.all() or not t.any():
        return float("nan")
    return float(roc_auc_score(t, s))


def run(args, methods: list[str]) -> list[dict]:
    recs = []
    for d in args.sizes:
        for i in range(args.tables):
            t = table(i, d, args.rows, args.missing, args.graphs)
            X = pd.DataFrame(t.X, columns=[f"x{j}" for j in range(d)])
            rec = {"d": d, "i": i, "seed": SEED0 + 1000 * d + i, "mechanism": t.mechanism,
                   "n_edges": int((t.edges | t.edges.T)[np.triu_indices(d, 1)].sum()), "pairs": d * (d - 1) // 2,
                   "auc": {}, "time_s": {}}
            for m in methods:
                try:
                    t0 = time.perf_counter()
                    A = scores(m, X, args)
                    rec["time_s"][m] = time.perf_counter() - t0
                    rec["auc"][m] = edge_auc(A, t.edges)
                except Exception as e:
                    rec["auc"][m] = float("nan")
                    rec.setdefault("errors", {})[m] = f"{type(e).__name__}: {e}"
                    traceback.print_exc()
            recs.append(rec)
            print(f"[relations] D={d:3d} #{i:3d} {t.mechanism:6s} edges {rec['n_edges']:3d}/{rec['pairs']:3d} "
                  + " ".join(f"{m}={rec['auc'][m]:.3f}" for m in methods), flush=True)
    return recs


def _group_rows(recs: list[dict], methods: list[str], key) -> list[list]:
    groups = defaultdict(list)
    for r in recs:
        if not all(np.isnan(r["auc"][m]) for m in methods):
            groups[key(r)].append(r)
    rows = []
    for g in sorted(groups, key=lambda g: (isinstance(g, str), g)):
        rs = groups[g]
        means = {m: np.nanmean([r["auc"][m] for r in rs]) for m in methods}
        best = max(means.values())
        cells = []
        for m in methods:
            v = [r["auc"][m] for r in rs if not np.isnan(r["auc"][m])]
            s = f"{np.mean(v):.3f} ± {np.std(v) / np.sqrt(max(1, len(v))):.3f}" if v else "—"
            cells.append(f"**{s}**" if v and means[m] == best else s)
        rows.append([str(g), len(rs), f"{np.mean([r['n_edges'] / r['pairs'] for r in rs]):.2f}", *cells])
    return rows


def report(recs, methods, args, info, command, started, elapsed) -> tuple[list[str], dict]:
    head = ["", "tables", "edge density", *[LABEL[m] for m in methods]]
    skipped = sum(all(np.isnan(r["auc"][m]) for m in methods) for r in recs)
    source = ("Held-out synthetic tables from the engine's prior (`sample_scm`, seeds 555,000,000 + 1000·D + i, never "
              "used in training)") if args.graphs == "prior" else (
              "Tables from outside the engine's prior (`er_table`: Erdős–Rényi DAGs, every node observed, linear, "
              "square, sine, abs or step mechanisms, uniform, Laplace or Gaussian noise; seeds 555,000,500 + 1000·D + i)")
    lines = ["## Relation discovery" + ("" if args.graphs == "prior" else ": graphs outside the prior"), "",
             f"{source}, {args.rows:,} rows, D ∈ {{{', '.join(map(str, args.sizes))}}}, {args.tables} tables per D, "
             f"missing-value injection {'off' if args.missing == 0 else f'p={args.missing}'}. Score: ROC-AUC of ranking "
             "the true (undirected) edges among all feature pairs by max(A[i, j], A[j, i]); 0.5 is chance. Mean ± "
             f"standard error over tables{f'; {skipped} tables with no edge (or only edges) skipped' if skipped else ''}. "
             f"FEAT: `relation_matrix(n_estimators={args.n_estimators}, max_rows={args.max_rows_feat})`, the other FEAT "
             f"matrices at their defaults, {C.precision_text(args.precision, args.device)}, checkpoint "
             f"{C.checkpoint_line(args.checkpoint)}. By mechanism family and per table: "
             f"{C.results_ref(args.section, args.out)}.", ""]
    by_size = _group_rows(recs, methods, lambda r: r["d"])
    total = _group_rows(recs, methods, lambda r: "all")
    total = [[f"**{row[0]}**", *row[1:]] for row in total]
    lines += [*C.markdown_table(["D (columns)", *head[1:]], by_size + total), ""]
    summary = {m: float(np.nanmean([r["auc"][m] for r in recs])) for m in methods}
    times = {m: float(np.sum([r["time_s"].get(m, 0.0) for r in recs])) for m in methods}
    ours = [m for m in methods if m.startswith("feat")]
    plain = ""
    if ours and len(ours) < len(methods):        # FEAT's best matrix against the strongest other one
        best = max(ours, key=lambda m: summary[m])
        other = max((m for m in methods if m not in ours), key=lambda m: summary[m])
        both = [r for r in recs if not (np.isnan(r["auc"][best]) or np.isnan(r["auc"][other]))]
        wins = sum(r["auc"][best] > r["auc"][other] for r in both)
        plain = (f"{LABEL[best]} is {'above' if summary[best] > summary[other] else 'below'} {LABEL[other]} on the mean "
                 f"({summary[best]:.3f} against {summary[other]:.3f}) and higher on {wins} of the {len(both)} tables. ")
    lines += [*C.wrap(plain + f"Time (s, all tables, {args.threads} thread{'s' if args.threads != 1 else ''}): "
                      + ", ".join(f"{LABEL[m]} {times[m]:.1f}" for m in methods) + "."), ""]
    lines += C.provenance(command, started, info, elapsed)
    return lines, {"mean_auc": summary, "time_s": times}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="8 tables per size, 512 rows")
    p.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], default=[5, 10, 20],
                   help="feature counts D (default 5,10,20; FEAT was pretrained on D <= 24)")
    p.add_argument("--tables", type=int, default=None, help="tables per size (default 40; quick 8)")
    p.add_argument("--rows", type=int, default=None, help="rows per table (default 1,024; quick 512)")
    p.add_argument("--missing", type=float, default=0.0, help="probability that a table gets missing values")
    p.add_argument("--graphs", choices=["prior", "er"], default="prior",
                   help="prior: the engine's prior (held-out seeds); er: Erdős–Rényi graphs with simple mechanisms, "
                        "outside the prior (writes the section relations-er)")
    p.add_argument("--n-estimators", type=int, default=2, help="relation_matrix members (its default)")
    p.add_argument("--max-rows-feat", type=int, default=1024, help="relation_matrix max_rows (its default)")
    p.add_argument("--methods", default=None, help=f"comma-separated subset of {METHODS}")
    p.add_argument("--device", default="auto")
    C.add_precision_arg(p)
    C.add_common_args(p, section="relations")
    args = p.parse_args(argv)
    args.tables = args.tables or (8 if args.quick else 40)
    args.rows = args.rows or (512 if args.quick else 1024)
    methods = args.methods.split(",") if args.methods else METHODS
    if args.graphs == "er" and args.section == "relations":
        args.section = "relations-er"
    return C.run_benchmark('relations.py', argv, args, lambda: run(args, methods),
                           lambda recs, *rest: report(recs, methods, args, *rest))


if __name__ == "__main__":
    raise SystemExit(main())
