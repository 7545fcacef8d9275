"""FEAT's relation matrices over one encoded table: where its feature-axis attention looks (`relation_matrix`,
paper section 6.4), how much worse it predicts a column without another (`dependence_matrix`) and the edge head's
probability of a direct link (`edge_matrix`), in the column order of the package's docstring.
"""
from __future__ import annotations

import os
from typing import Any, Hashable

import numpy as np
import pandas as pd
import torch
from scipy.special import expit, softmax

from ..checkpoint import checkpoint_path, edge_head_path, load_edge_head, resolve_model, trained_max_features
from ..errors import FEATInputError
from ..inference import autocast, map_runs, precision_config, resolve_device, run
from ..model import FEAT
from ..model.edge_head import DEPTHS, EdgeHead
from ..preprocess import TablePreprocessor
from ..progress import Progress, StepCounter
from ..reading.members import plan_members
from ..targets import ClassEncoder, TargetScaler, infer_task, numeric_target, target_rows
from .correlations import mutual_information_among, pair_statistics, split_target


def _encoded_columns(X: pd.DataFrame, y: pd.Series | None, target: Hashable | None, max_classes: int,
                     ) -> tuple[np.ndarray, list[str], int | None]:
    """Standardised encoded features, then the target (standardised, or class codes), and the
    target's class count (None for regression or no target)."""
    pre = TablePreprocessor().fit(X)
    x, names = pre.transform(X), pre.feature_names_
    if y is None:
        return x, names, None
    keep = target_rows(y, len(X), str(target))
    x, y = x[keep], y.iloc[keep]
    if infer_task(y) == "regression":
        y = numeric_target(y)
        return np.column_stack([x, TargetScaler().fit(y, str(target)).transform(y)]), names + [str(target)], None
    enc = ClassEncoder().fit(y, str(target))
    if len(enc.classes_) > max_classes:
        raise FEATInputError(f"target {target!r} has {len(enc.classes_)} classes; "
                             f"the relation matrices support at most {max_classes}")
    return np.column_stack([x, enc.transform(y)]), names + [str(target)], len(enc.classes_)


def _codes_as_numbers(z: np.ndarray, n_classes: int | None) -> np.ndarray:
    """A copy of `z` whose last column, class codes when `n_classes` is set, reads as a standardised number."""
    z = z.copy()
    if n_classes is not None:
        t = z[:, -1]
        z[:, -1] = (t - t.mean()) / (t.std() or 1.0)
    return z


def _read_beside(z: np.ndarray, width: int, random_state: int | None = 0) -> list[np.ndarray]:
    """For each column of z (rows x columns, NaN allowed), the other columns a run that predicts it reads: all of
    them where they are at most `width` (the widest table the model was pretrained on), else the `width` most
    related to it by mutual information (`mutual_information_among`, once), in column order."""
    d = z.shape[1]
    if d - 1 <= width:
        return [np.delete(np.arange(d), i) for i in range(d)]
    mi = mutual_information_among(z, random_state, once=True)
    return [np.sort(np.delete(np.arange(d), i)[np.argsort(-np.delete(mi[i], i), kind="stable")[:width]])
            for i in range(d)]


def dependence_matrix(
    X: Any, target: Hashable | None = None, max_rows: int = 1024, n_query: int = 128,
    random_state: int | None = 0, device: str = "auto", precision: str = "auto",
    checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
) -> pd.DataFrame:
    """Masking sensitivity: [i, j] = how much worse FEAT predicts column i, in context from all the
    other columns, when column j is hidden from the query rows. The loss increase is a share of column
    i's variance (for a classification target: of the Brier score of its class frequencies), clipped at 0.
    It measures what j adds about i beyond the other columns, so it tends to miss pairs linked only
    through a third observed column, which the attention and the correlations cannot tell apart from
    direct ones.

    One run per column: its query rows come once whole and once per other column with that column
    missing, so each run prices every other column at once. On a CPU the runs share the cores. A table
    wider than the model was pretrained on (24 other columns for the shipped checkpoints) is read as the
    estimators read one: each column's run reads that many other columns, those most related to it by
    mutual information on the context rows (`_read_beside`), and the pairs it does not read are 0; the
    runs' cost then grows with the columns rather than with their cube
    (docs/decisions/0032-relation-matrices.md).

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_rows, n_columns)
        The table, its columns read as `pearson_matrix` reads them.
        At least 8 rows must remain (after dropping those without a target).
    target : hashable or None, default None
        Label of a column of X to read as the target: it leaves the features and comes last (standardised
        values for a regression target, class codes for a classification one); rows without it are dropped
        with a warning. None: no target row or column.
    max_rows : int, default 1024
        Rows drawn at random (all of them when the table has fewer): the queries, then the context.
    n_query : int, default 128
        How many of the drawn rows are queries, clipped to between 1 and a quarter of them; the rest are
        the context.
    random_state : int or None, default 0
        Seed of the row draw and of the S-DFE column identities (one draw for every column's run); None
        draws afresh at each call.
    device : str, default "auto"
        Where the engine runs, as a torch device name: "auto" takes a CUDA GPU when PyTorch sees one, else
        the CPU.
    precision : {"auto", "fp32", "bf16"}, default "auto"
        Arithmetic of the engine's matrix products, as the estimators' `precision`: "auto" takes bf16 where it
        is fast (a GPU, or a CPU that multiplies bf16 natively) and fp32 elsewhere.
    checkpoint : path, {"small", "fast"}, FEAT or None, default None
        The pretrained model: a checkpoint file, a loaded model, or a shipped one by name ("small", also None,
        or "fast").
    progress : callable or None, default None
        Called as progress(done, total, message) over the runs, one per column.

    Returns
    -------
    DataFrame of shape (n_encoded, n_encoded)
        [i, j] is the clipped loss increase on column i without column j, indexed and labelled by the
        encoded feature names, then the target's name. The diagonal is 0, and so is the row of a column with
        too few values to tell (fewer than 4 context rows or no query row holding one, or a number that is
        constant over the context).
    """
    X, y = split_target(X, target)
    cfg = precision_config(precision, device)
    model, meta = resolve_model(checkpoint)
    z, names, n_classes = _encoded_columns(X, y, target, model.cfg.max_classes)
    if len(z) < 8:
        raise FEATInputError(f"dependence_matrix needs at least 8 rows, got {len(z)}")
    rows = np.random.default_rng(random_state).permutation(len(z))[:max_rows]
    n_q = int(np.clip(n_query, 1, len(rows) // 4))
    q, c = rows[:n_q], rows[n_q:]
    d = z.shape[1]
    is_class = np.zeros(d, bool)
    is_class[-1] = n_classes is not None
    inputs = _codes_as_numbers(z, n_classes)
    steps = StepCounter(progress, d)
    says = [steps.callback(f"column {i + 1}/{d} ({names[i]})") for i in range(d)]    # in column order
    beside = _read_beside(z[c], trained_max_features(meta), random_state)
    k = len(beside[0])
    ids = model.column_ids(1, k, seed=random_state)      # one S-DFE draw for every column's run

    def priced(i: int) -> np.ndarray | None:
        """How much worse column i is predicted without each column its run reads, `beside[i]` (None: too few
        values to tell)."""
        others = beside[i]
        ctx = c[np.isfinite(z[c, i])]
        qi = q[np.isfinite(z[q, i])]
        say = says[i]
        if len(ctx) < 4 or len(qi) == 0 or (not is_class[i] and np.nanstd(z[ctx, i]) == 0):
            return None
        xq = np.repeat(inputs[qi][:, others][None], k + 1, axis=0)      # copy 0 whole, copy m + 1 without column m
        for m in range(k):
            xq[m + 1, :, m] = np.nan
        xq = xq.reshape(-1, k)
        if is_class[i]:
            res = run(model, inputs[ctx][:, others], z[ctx, i], xq, "classification", n_classes=n_classes,
                      column_ids=ids, device=device, cfg=cfg, progress=say)
            p = softmax(res.logits[:, :n_classes].astype(np.float64), axis=1).reshape(k + 1, len(qi), n_classes)
            truth = np.eye(n_classes)[z[qi, i].astype(int)]
            freq = np.bincount(z[ctx, i].astype(int), minlength=n_classes) / len(ctx)
            loss = ((p - truth) ** 2).sum(-1).mean(-1) / max(((freq - truth) ** 2).sum(-1).mean(), 1e-12)
        else:
            mu, sd = z[ctx, i].mean(), z[ctx, i].std()
            res = run(model, inputs[ctx][:, others], (z[ctx, i] - mu) / sd, xq, "regression",
                      column_ids=ids, device=device, cfg=cfg, progress=say)
            loss = ((res.pred.reshape(k + 1, len(qi)) - (z[qi, i] - mu) / sd) ** 2).mean(-1)
        return np.maximum(loss[1:] - loss[0], 0.0)

    out = np.zeros((d, d))
    for i, row in enumerate(map_runs(priced, range(d), device, steps.flush)):       # the columns on all cores
        if row is not None:
            out[i, beside[i]] = row
    return pd.DataFrame(out, index=names, columns=names)


def edge_matrix(
    X: Any, target: Hashable | None = None, n_estimators: int = 1, max_rows: int = 1024,
    random_state: int | None = 0, device: str = "auto", precision: str = "auto",
    checkpoint: str | os.PathLike | FEAT | None = None, edge_head: str | os.PathLike | EdgeHead | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Probability that columns i and j are directly linked (an edge of the table's causal graph, either
    way), from FEAT's edge head (model/edge_head.py), trained on the prior's causal graphs, which reads
    FEAT's column tokens and the pair's classical statistics (`pair_statistics`): symmetric, zero
    diagonal, in relation_matrix's order.

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_rows, n_columns)
        The table, its columns read as `pearson_matrix` reads them.
        At least 2 columns must result, the target included.
    target : hashable or None, default None
        Label of a column of X to read as the target: it leaves the features and comes last (standardised
        values for a regression target, class codes read as a standardised number for a classification
        one); rows without it are dropped with a warning. None: no target row or column.
    n_estimators : int, default 1
        Members, each reading its own rows, column order and S-DFE draw, and the pair statistics of those
        rows; the head's logits are averaged over them.
    max_rows : int, default 1024
        Rows each member reads, a random subset of them (all of them when the table has fewer).
    random_state : int or None, default 0
        Seed of every member's rows, column order and S-DFE draw, and of the mutual-information estimates;
        None draws afresh at each call.
    device : str, default "auto"
        Where the engine runs, as in `dependence_matrix`.
    precision : {"auto", "fp32", "bf16"}, default "auto"
        Arithmetic of the engine's matrix products, as in `dependence_matrix`.
    checkpoint : path, {"small", "fast"}, FEAT or None, default None
        The pretrained model, as in `dependence_matrix`.
        The edge head is looked up beside the file (or the shipped one) unless `edge_head` is given; only
        "small" ships with one.
    edge_head : path, EdgeHead or None, default None
        The edge head: a file, a loaded head, or None for the one beside the checkpoint
        (`<checkpoint>-edges.pt`). A file is checked to have been trained on the checkpoint's tokens (when
        `checkpoint` is not a loaded model). Required with a loaded model as `checkpoint`.
    progress : callable or None, default None
        Called as progress(done, total, message), one step per member.

    Returns
    -------
    DataFrame of shape (n_encoded, n_encoded)
        Probabilities of a direct link, indexed and labelled by the encoded feature names, then the
        target's name.
    """
    X, y = split_target(X, target)
    cfg = precision_config(precision, device)
    model, _ = resolve_model(checkpoint)
    if isinstance(edge_head, EdgeHead):
        head = edge_head.eval()
    elif isinstance(checkpoint, FEAT) and edge_head is None:
        raise FEATInputError("edge_matrix with a loaded model as `checkpoint` needs its `edge_head` too")
    else:
        backbone = None if isinstance(checkpoint, FEAT) else checkpoint_path(checkpoint)
        head, _ = load_edge_head(edge_head or edge_head_path(backbone), backbone)
    z, names, n_classes = _encoded_columns(X, y, target, model.cfg.max_classes)
    z = _codes_as_numbers(z, n_classes)
    d = z.shape[1]
    if d < 2:
        raise FEATInputError(f"edge_matrix needs at least 2 columns, got {d}")
    dev = resolve_device(device)
    model, head = model.to(dev).eval(), head.to(dev)
    members = plan_members(len(z), d, n_estimators, d, max_rows, random_state)
    steps = StepCounter(progress, len(members))
    total = np.zeros((d, d))
    for i, m in enumerate(members):
        say = steps.callback(f"member {i + 1}/{len(members)}")
        zm = z[m.rows][:, m.features]
        x = torch.as_tensor(zm, dtype=torch.float32, device=dev)[None]
        stats = torch.as_tensor(pair_statistics(zm, random_state), device=dev)
        with torch.no_grad():
            with autocast(dev, cfg.autocast_bf16):                      # the engine's tokens; the head reads fp32
                tokens = [t[0].float() for t in model.column_tokens(x, m.column_ids(model).to(dev), DEPTHS)]
            logits = head(tokens, stats)
        total[np.ix_(m.features, m.features)] += logits.double().cpu().numpy()
        if say is not None:
            say(1, 1, "tokens read")
    p = expit(total / len(members))
    np.fill_diagonal(p, 0.0)
    return pd.DataFrame(p, index=names, columns=names)


def relation_matrix(
    X: Any, target: Hashable | None = None, n_estimators: int = 2, max_rows: int = 1024,
    random_state: int | None = 0, device: str = "auto", precision: str = "auto",
    checkpoint: str | os.PathLike | FEAT | None = None, progress: Progress | None = None,
) -> pd.DataFrame:
    """D x D (or (D+1) x (D+1) with `target`, a column of X) FEAT attention relations.

    The runner returns, per block, the feature-axis attention (heads, C, C) averaged over rows, where
    C = D + 1 and the last token is the label. It is averaged over blocks and heads, the label token is
    dropped when there is no target, the diagonal is zeroed (a token attending to itself says nothing
    about relations) and each row is normalised to sum to 1. Entry [i, j] is then the share of row
    feature i's attention to *other* features that goes to column feature j: "i reads from j"; the
    matrix is not symmetric.

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_rows, n_columns)
        The table, its columns read as `pearson_matrix` reads them.
    target : hashable or None, default None
        Label of a column of X to read as the target: its values are the context labels and its label
        token comes last under its name; rows without it are dropped with a warning. None: no labels, and
        the label token is dropped.
    n_estimators : int, default 2
        Members, each with its own row subsample, row order, column order and S-DFE identities; their
        attention is averaged.
    max_rows : int, default 1024
        Rows each member reads, a random subsample (all of them when the table has fewer): attention is an
        average over rows, which settles long before that.
    random_state : int or None, default 0
        Seed of every member's draws, so the result is reproducible for a fixed seed; None draws afresh at
        each call.
    device : str, default "auto"
        Where the engine runs, as in `dependence_matrix`.
    precision : {"auto", "fp32", "bf16"}, default "auto"
        Arithmetic of the engine's matrix products, as in `dependence_matrix`.
    checkpoint : path, {"small", "fast"}, FEAT or None, default None
        The pretrained model, as in `dependence_matrix`.
    progress : callable or None, default None
        Called as progress(done, total, message), one step per member.

    Returns
    -------
    DataFrame of shape (D, D), or (D + 1, D + 1) with a target
        Row-normalised attention shares with a zero diagonal, indexed and labelled by the encoded feature
        names, then the target's name.
    """
    X, y = split_target(X, target)
    cfg = precision_config(precision, device)
    model, _ = resolve_model(checkpoint)
    z, names, n_classes = _encoded_columns(X, y, target, model.cfg.max_classes)
    task = None if y is None else ("regression" if n_classes is None else "classification")
    x, y_ctx = (z, None) if y is None else (z[:, :-1], z[:, -1].astype(np.float32))
    d = x.shape[1]
    members = plan_members(len(x), d, n_estimators, d, max_rows, random_state)
    steps = StepCounter(progress, len(members))
    total = np.zeros((d + 1, d + 1))
    for i, m in enumerate(members):
        res = run(model, x[m.rows][:, m.features], None if y_ctx is None else y_ctx[m.rows], None, task,
                  n_classes=n_classes, column_ids=m.column_ids(model), device=device, cfg=cfg, want_attention=True,
                  progress=steps.callback(f"member {i + 1}/{len(members)}"))
        a = np.mean([blk.mean(0) for blk in res.attention], axis=0)      # (C, C), member's feature order
        order = np.append(m.features, d)                                  # back to the table's order
        total[np.ix_(order, order)] += a
    a = total if y is not None else total[:d, :d]
    np.fill_diagonal(a, 0.0)
    a = a / np.where(a.sum(1, keepdims=True) > 0, a.sum(1, keepdims=True), 1.0)
    return pd.DataFrame(a, index=names, columns=names)
