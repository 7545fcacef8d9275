"""The `feat` command line: predict, impute, relations (CSV, TSV, Parquet, Excel).

    feat predict --context train.csv --target y --query test.csv -o predictions.csv
    feat predict --context train.csv --target y --query 'parts/*.parquet' -o out/ [--scheduler tcp://host:8786]
    feat impute table.csv -o filled.csv
    feat relations table.csv -o relations.csv [--target y] [--method attention|dependence|edges|mi|pearson|spearman]

Input files are read by `feat_engine.io` (the app's reader too): the encoding and delimiter of text
files are detected unless --encoding or --delimiter says. A directory or glob of Parquet files as
--query is scored on Dask (`dask_scoring.py`): one output Parquet file per input file, in the directory -o.
A column that numbers the rows (a row id) is not read, as the app does not read it, unless --keep-ids.
Progress, warnings and what the reader chose on its own (a title skipped, a row of totals left out, a row id)
go to stderr. Bad input prints one error line and exits with code 2.
"""
from __future__ import annotations

import argparse
import sys
import warnings

import pandas as pd

from .errors import CheckpointError, FEATInputError
from .estimators import LOCAL_CONTEXT, PRECISIONS, FEATClassifier, FEATImputer, FEATRegressor
from .io import DELIMITERS, ENCODINGS, load_source, output_directory, table_format, write_table
from .predictions import Fitted, prediction_frame
from .preprocess import row_id
from .relations import (
    dependence_matrix, edge_matrix, mutual_information_matrix, pearson_matrix, relation_matrix, spearman_matrix,
)
from .sources import names_parts, parquet_parts
from .targets import a_class_a_row, infer_task


_TOLD = {"tenth": -1}       # the tenth of a stream a log (stderr not a terminal) was last told


def _progress(done: int, total: int, msg: str) -> None:
    """A progress report on stderr: the share done as a percentage, then the message. On a terminal one line,
    rewritten in place; into a log (a pipe, a file, nohup) a line at each tenth of a stream, not a carriage return
    and an escape code a report (hundreds in a minute's predict). Not "done/total": a stream over runs of different
    lengths reports other totals as it goes (the imputer's columns went [1/3], [10/15], [3/3]), while its share done
    never moves back, so a lower tenth is a new stream; its end is always told."""
    share = 100 * done / total if total else 100
    if sys.stderr.isatty():
        print(f"\r[{share:3.0f}%] {msg}\033[K", end="\n" if done == total else "", file=sys.stderr, flush=True)
    elif int(share // 10) != _TOLD["tenth"] or done == total:
        _TOLD["tenth"] = int(share // 10)
        print(f"[{share:3.0f}%] {msg}", file=sys.stderr, flush=True)


def local_context_arg(value: str) -> int | str | None:
    """A --local-context value: rows per part, 0 or 'none' for the whole context, or 'auto'."""
    v = value.strip().lower()
    if v in ("none", "0"):
        return None
    if v == "auto":
        return "auto"
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of rows, 'none' or 'auto', got {value!r}") from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="feat", description="FEAT zero-shot tabular predictions, imputation and relations.")
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-o", "--output", required=True,
                        help="output file (.csv, .tsv, .parquet, .xlsx); a directory for a --query of Parquet files")
    common.add_argument("--checkpoint", default=None,
                        help="model checkpoint: a file, or small (the default) or fast, the shipped ones")
    common.add_argument("--device", default="auto", help="auto, cpu or cuda")
    common.add_argument("--n-estimators", type=int, default=None,
                        help="ensemble members (default: the library's: for predict up to 4 on long contexts, "
                             "kept while each changes the answers; on short ones 2, or 1 for more than two classes; "
                             "1 per column for impute; 2 for relations)")
    common.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    common.add_argument("--delimiter", choices=["auto", *DELIMITERS.values()], default="auto",
                        help="delimiter of text input files (default: detected)")
    common.add_argument("--encoding", choices=["auto", *ENCODINGS], default="auto",
                        help="encoding of text input files (default: detected)")
    common.add_argument("--keep-ids", action="store_true",
                        help="read columns that number the rows (1, 2, 3, ..., or a different whole number on every "
                             "row under a header such as rownames, Unnamed: 0 or id) as features; by default they are "
                             "left out, as the app leaves them out (impute writes them back as they were)")
    pr = sub.add_parser("predict", parents=[common], help="predict a target column for query rows")
    pr.add_argument("--context", required=True, help="labelled table")
    pr.add_argument("--target", required=True, help="target column of the context table")
    pr.add_argument("--query", required=True,
                    help="rows to predict (the target column, if present, is ignored): a file, or a directory or "
                         "quoted glob of Parquet files, scored on Dask into the directory -o")
    pr.add_argument("--scheduler", default=None,
                    help="for a directory or glob --query: a Dask scheduler's address (tcp://host:8786), or "
                         "'local' (default) for a cluster on this machine")
    pr.add_argument("--task", choices=["auto", "classification", "regression"], default="auto")
    pr.add_argument("--max-context", type=int, default=None, help="cap on context rows per ensemble member")
    pr.add_argument("--local-context", type=local_context_arg, default=LOCAL_CONTEXT,
                    help=f"rows per local context on long tables; 0 or 'none' reads the whole context, 'auto' "
                         f"chooses among parts of 512, of 1,024 and the whole context on the context (default "
                         f"{LOCAL_CONTEXT})")
    im = sub.add_parser("impute", parents=[common], help="fill the missing cells of a table")
    im.add_argument("table")
    im.add_argument("--max-context", type=int, default=None, help="impute in blocks of this many rows")
    re = sub.add_parser("relations", parents=[common], help="feature-relation matrix")
    for sp in (pr, im, re):
        sp.add_argument("--precision", choices=list(PRECISIONS), default="auto",
                        help="auto (default): bf16 autocast where it is fast (a GPU, a CPU with native bf16: AMX or "
                             "AVX512-BF16), else fp32; fp32 gives the same numbers on every CPU")
    re.add_argument("table")
    re.add_argument("--target", default=None, help="include this column as the target")
    re.add_argument("--method", choices=["attention", "dependence", "edges", "mi", "pearson", "spearman"],
                    default="attention",
                    help="attention: where FEAT looks; dependence: how much worse FEAT predicts a column "
                         "without another (one run per column); edges: the probability of a direct link, from "
                         "FEAT's edge head; mi: k-nearest-neighbour mutual information; "
                         "pearson, spearman: correlations")
    return p


# how text outputs are written, whatever the inputs' encoding and delimiter: said after "wrote <file>"
TEXT_OUTPUTS = {"csv": " (UTF-8, comma-separated)", "tsv": " (UTF-8, tab-separated)"}


def _read(path: str, a: argparse.Namespace) -> pd.DataFrame:
    """An input table, with the --delimiter and --encoding choices; what the reader chose on its own (a title
    skipped, a row of totals left out) goes to stderr."""
    sep = {name: d for d, name in DELIMITERS.items()}.get(a.delimiter, "auto")
    loaded = load_source(path, delimiter=sep, encoding=a.encoding)
    for note in loaded.notes:
        print(f"feat: {path}: {note}", file=sys.stderr)
    return loaded.df


def _row_ids(table: pd.DataFrame, path: str, a: argparse.Namespace, target: str | None = None) -> list:
    """The columns of `table` (read from `path`) that number its rows (`preprocess.row_id`), which FEAT does not read
    unless --keep-ids; each one left out is said on stderr. The target is never one."""
    if a.keep_ids:
        return []
    ids = [(c, why) for c in table.columns if c != target and (why := row_id(table[c])) is not None]
    for c, why in ids:
        print(f"feat: {path}: left out column {c!r}, a {why}; --keep-ids reads it", file=sys.stderr)
    return [c for c, _ in ids]


def _members(a: argparse.Namespace) -> dict:
    """n_estimators when --n-estimators was given; otherwise the library's default for the command."""
    return {} if a.n_estimators is None else {"n_estimators": a.n_estimators}


def _fit(a: argparse.Namespace) -> tuple[Fitted, list]:
    """The classifier or regressor for --target, fitted on the --context table, and the row-id columns it left out
    (`_row_ids`), which the query rows then leave out too."""
    ctx = _read(a.context, a)
    if a.target not in ctx.columns:
        raise FEATInputError(f"{a.context}: target column {a.target!r} does not exist (columns: {list(ctx.columns)})")
    ids = _row_ids(ctx, a.context, a, a.target)
    y, X = ctx[a.target], ctx.drop(columns=[a.target, *ids])
    task = infer_task(y) if a.task == "auto" else a.task
    if task == "classification" and a_class_a_row(y):
        raise FEATInputError(f"{a.context}: target {a.target!r} holds {y.nunique():,} classes in {y.notna().sum():,} "
                             "labelled rows: almost every row is its own class. Give --task regression if it holds "
                             "numbers, or pick another target")
    kw = dict(random_state=a.seed, device=a.device, max_context=a.max_context, checkpoint=a.checkpoint,
              progress=_progress, local_context=a.local_context, precision=a.precision, **_members(a))
    est = (FEATRegressor if task == "regression" else FEATClassifier)(**kw).fit(X, y)
    print(f"feat: {est.reading_}", file=sys.stderr)
    return est, ids


def _predict_parts(a: argparse.Namespace) -> None:
    """A directory or glob of Parquet files as --query: scored on Dask, one Parquet file per input file."""
    from .dask_scoring import connect, predict_partitions, read_parquet_parts, write_parquet_parts
    files = parquet_parts(a.query)
    query = read_parquet_parts(files)             # from the files' footers: readable, one set of columns
    output_directory(a.output)                    # fail on an unusable output before any work
    est, ids = _fit(a)
    result = predict_partitions(est, query.drop(columns=ids, errors="ignore"), a.target)
    address = a.scheduler or "local"
    print(f"feat: scoring {len(files)} partition(s) on Dask ({address})", file=sys.stderr)
    with connect(address):
        write_parquet_parts(result, a.output, progress=_progress)


def _run(a: argparse.Namespace) -> None:
    if a.command == "predict" and names_parts(a.query):
        _predict_parts(a)
        return
    if a.command == "predict" and a.scheduler is not None:
        raise FEATInputError(f"--scheduler {a.scheduler}: Dask scores a directory or glob of Parquet files; "
                             f"--query {a.query} is one file, predicted in this process.")
    table_format(a.output)                        # fail on an unsupported output before any work
    if a.command == "predict":
        query = _read(a.query, a)
        est, ids = _fit(a)
        write_table(prediction_frame(est, query.drop(columns=ids, errors="ignore"), a.target), a.output)
        return
    table = _read(a.table, a)
    ids = _row_ids(table, a.table, a, a.target if a.command == "relations" else None)
    if a.command == "impute":
        filled = FEATImputer(n_estimators=a.n_estimators, random_state=a.seed, device=a.device,
                             max_context=a.max_context, checkpoint=a.checkpoint, progress=_progress,
                             precision=a.precision).fit_transform(table.drop(columns=ids))
        write_table(pd.concat([filled, table[ids]], axis=1)[table.columns], a.output)
        return
    table = table.drop(columns=ids)
    feat = dict(random_state=a.seed, device=a.device, precision=a.precision, checkpoint=a.checkpoint,
                progress=_progress)
    if a.method == "attention":
        m = relation_matrix(table, a.target, **_members(a), **feat)
    elif a.method == "dependence":
        m = dependence_matrix(table, a.target, **feat)
    elif a.method == "edges":
        m = edge_matrix(table, a.target, **_members(a), **feat)
    elif a.method == "mi":
        m = mutual_information_matrix(table, a.target, random_state=a.seed)
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
        except (FEATInputError, CheckpointError, OSError, ImportError) as e:   # ImportError: a missing extra
            print(f"feat: error: {e}", file=sys.stderr)
            return 2
    written = "" if a.command == "predict" and names_parts(a.query) else TEXT_OUTPUTS.get(table_format(a.output), "")
    print(f"wrote {a.output}{written}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
