"""The `feat` command line: predict, impute, relations (CSV, TSV, Parquet, Excel).

    feat predict --context train.csv --target y --query test.csv -o predictions.csv
    feat impute table.csv -o filled.csv
    feat relations table.csv -o relations.csv [--target y] [--method attention|pearson|spearman]

Input files are read by `feat_engine.io` (the app's reader too): the encoding and delimiter of text
files are detected unless --encoding or --delimiter says. Progress and warnings go to stderr. Bad
input prints one error line and exits with code 2.
"""
from __future__ import annotations

import argparse
import sys
import warnings

import pandas as pd

from .checkpoint import CheckpointError
from .estimators import LOCAL_CONTEXT, FEATClassifier, FEATImputer, FEATRegressor
from .io import DELIMITERS, ENCODINGS, read_table, table_format, write_table
from .preprocess import FEATInputError, infer_task
from .relations import pearson_matrix, relation_matrix, spearman_matrix


def _progress(done: int, total: int, msg: str) -> None:
    print(f"\r[{done}/{total}] {msg}\033[K", end="\n" if done == total else "", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="feat", description="FEAT zero-shot tabular predictions, imputation and relations.")
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-o", "--output", required=True, help="output file (.csv, .tsv, .parquet, .xlsx)")
    common.add_argument("--checkpoint", default=None, help="model checkpoint (default: the shipped one)")
    common.add_argument("--device", default="auto", help="auto, cpu or cuda")
    common.add_argument("--n-estimators", type=int, default=4, help="ensemble members (default 4)")
    common.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    common.add_argument("--delimiter", choices=["auto", *DELIMITERS.values()], default="auto",
                        help="delimiter of text input files (default: detected)")
    common.add_argument("--encoding", choices=["auto", *ENCODINGS], default="auto",
                        help="encoding of text input files (default: detected)")
    pr = sub.add_parser("predict", parents=[common], help="predict a target column for query rows")
    pr.add_argument("--context", required=True, help="labelled table")
    pr.add_argument("--target", required=True, help="target column of the context table")
    pr.add_argument("--query", required=True, help="rows to predict (the target column, if present, is ignored)")
    pr.add_argument("--task", choices=["auto", "classification", "regression"], default="auto")
    pr.add_argument("--max-context", type=int, default=None, help="cap on context rows per ensemble member")
    pr.add_argument("--local-context", type=int, default=LOCAL_CONTEXT,
                    help=f"rows per local context on long tables; 0 reads the whole context (default {LOCAL_CONTEXT})")
    im = sub.add_parser("impute", parents=[common], help="fill the missing cells of a table")
    im.add_argument("table")
    im.add_argument("--max-context", type=int, default=None, help="impute in blocks of this many rows")
    re = sub.add_parser("relations", parents=[common], help="feature-relation matrix")
    re.add_argument("table")
    re.add_argument("--target", default=None, help="include this column as the target")
    re.add_argument("--method", choices=["attention", "pearson", "spearman"], default="attention")
    return p


def _read(path: str, a: argparse.Namespace) -> pd.DataFrame:
    """An input table, with the --delimiter and --encoding choices."""
    sep = {name: d for d, name in DELIMITERS.items()}.get(a.delimiter, "auto")
    return read_table(path, delimiter=sep, encoding=a.encoding)


def _predict(a: argparse.Namespace) -> pd.DataFrame:
    ctx, query = _read(a.context, a), _read(a.query, a)
    if a.target not in ctx.columns:
        raise FEATInputError(f"{a.context}: target column {a.target!r} does not exist (columns: {list(ctx.columns)})")
    y, X = ctx[a.target], ctx.drop(columns=[a.target])
    query = query.drop(columns=[a.target], errors="ignore")
    task = infer_task(y) if a.task == "auto" else a.task
    kw = dict(n_estimators=a.n_estimators, random_state=a.seed, device=a.device, max_context=a.max_context,
              checkpoint=a.checkpoint, progress=_progress, local_context=a.local_context or None)
    if task == "regression":
        reg = FEATRegressor(**kw).fit(X, y)
        print(f"feat: {reg.reading_}", file=sys.stderr)
        return pd.DataFrame({a.target: reg.predict(query)}, index=query.index)
    clf = FEATClassifier(**kw).fit(X, y)
    print(f"feat: {clf.reading_}", file=sys.stderr)
    proba = clf.predict_proba(query)
    out = pd.DataFrame(proba, columns=[f"p({c})" for c in clf.classes_], index=query.index)
    out.insert(0, a.target, clf.classes_[proba.argmax(1)])
    return out


def _run(a: argparse.Namespace) -> None:
    table_format(a.output)                        # fail on an unsupported output before any work
    if a.command == "predict":
        write_table(_predict(a), a.output)
        return
    table = _read(a.table, a)
    if a.command == "impute":
        out = FEATImputer(n_estimators=a.n_estimators, random_state=a.seed, device=a.device,
                          max_context=a.max_context, checkpoint=a.checkpoint, progress=_progress).fit_transform(table)
        write_table(out, a.output)
        return
    if a.method == "attention":
        m = relation_matrix(table, a.target, n_estimators=a.n_estimators, random_state=a.seed, device=a.device,
                            checkpoint=a.checkpoint, progress=_progress)
    else:
        m = (pearson_matrix if a.method == "pearson" else spearman_matrix)(table, a.target)
    write_table(m, a.output, index=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `feat`; returns the exit code (0 ok, 2 bad input)."""
    a = _parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda msg, *_: print(f"feat: warning: {msg}", file=sys.stderr)
        try:
            _run(a)
        except (FEATInputError, CheckpointError, OSError) as e:
            print(f"feat: error: {e}", file=sys.stderr)
            return 2
    print(f"wrote {a.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
