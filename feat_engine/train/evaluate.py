"""Evaluation during pretraining: a fixed held-out synthetic suite and the real development
tables of `../shared/datasets` (contexts subsampled for speed), next to simple baselines.

The real-table score (mean ROC-AUC over classification tables and mean R^2 over
regression tables, averaged) decides which checkpoint is kept.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ..config import PriorConfig
from ..model import FEAT
from ..predictions import roc_auc
from ..preprocess import standardise
from ..prior.batches import make_batch
from ..prior.real import encode_column
from .losses import batch_tensors, feat_loss

SHARED_ENV = "FEAT_SHARED_DIR"
TASKS_ENV = "FEAT_EVAL_TASKS"           # an .npz of packed tasks (`train/carry.py`), read instead of the tables
SYNTH_SEED = 987_654_321     # never used by a training stream (those use the run's seed)


def realdata_module():
    """Import ../shared/datasets/realdata.py (the development tables), or None if absent."""
    root = Path(os.environ.get(SHARED_ENV, Path(__file__).resolve().parents[3] / "shared"))
    path = root / "datasets" / "realdata.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("feat_realdata", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["feat_realdata"] = mod
    spec.loader.exec_module(mod)
    return mod


@dataclass
class EvalTask:
    name: str
    task: str
    x_ctx: np.ndarray
    y_ctx: np.ndarray
    x_q: np.ndarray
    y_q: np.ndarray
    n_classes: int


def _encode_frame(X) -> np.ndarray:
    cols = [encode_column(X[c]) for c in X.columns]
    return np.stack([c for c in cols if c is not None], 1)


def real_eval_tasks(max_ctx: int = 1024, max_query: int = 256, max_features: int = 24, max_classes: int = 10, seed: int = 0) -> list[EvalTask]:
    """Deterministic splits of the development tables (those the model can take directly); with
    `$FEAT_EVAL_TASKS`, the splits packed there (for a machine without the tables: `train/carry.py`)."""
    if os.environ.get(TASKS_ENV):
        return load_eval_tasks(os.environ[TASKS_ENV])
    rd = realdata_module()
    if rd is None:
        return []
    tasks, missing = [], []
    names = [n for kind in rd.NAMES.values() for size in kind.values() for n in size]
    for name in names:
        try:
            X, y, kind = rd.load(name)
        except (FileNotFoundError, ImportError):  # data files not installed: skip that table, and say so
            missing.append(name)
            continue
        rng = np.random.default_rng(seed)
        Xe = _encode_frame(X)
        if Xe.shape[1] > max_features:
            Xe = Xe[:, np.sort(rng.choice(Xe.shape[1], max_features, replace=False))]
        if kind == "classification":
            codes, uniq = np.unique(y.astype(str).to_numpy(), return_inverse=True)
            if len(codes) > max_classes:
                continue
            yv = uniq.astype(float)
            strat = yv
        else:
            yv = y.to_numpy(dtype=float)
            strat = None
        idx_tr, idx_te = train_test_split(np.arange(len(yv)), test_size=0.2, random_state=seed, stratify=strat)
        idx_tr = rng.permutation(idx_tr)[:max_ctx]
        idx_te = rng.permutation(idx_te)[:max_query]
        if kind == "classification" and len(np.unique(yv[idx_tr])) < len(codes):
            continue
        x_all = standardise(np.concatenate([Xe[idx_tr], Xe[idx_te]]), len(idx_tr)).astype(np.float32)
        y_tr, y_te = yv[idx_tr], yv[idx_te]
        tasks.append(EvalTask(name, kind, x_all[:len(idx_tr)], y_tr, x_all[len(idx_tr):], y_te,
                              len(codes) if kind == "classification" else 0))
    if missing:
        warnings.warn(f"development tables not installed, left out of the evaluation: {', '.join(missing)} "
                      "(run `bash ../shared/datasets/setup.sh` once)", stacklevel=2)
    return tasks


def save_eval_tasks(tasks: list[EvalTask], path: str | os.PathLike) -> None:
    """Pack evaluation tasks into one .npz (`load_eval_tasks` reads them back unchanged)."""
    arrays = {f"{i}.{k}": getattr(t, k) for i, t in enumerate(tasks) for k in ("x_ctx", "y_ctx", "x_q", "y_q")}
    meta = [[t.name, t.task, t.n_classes] for t in tasks]
    np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)


def load_eval_tasks(path: str | os.PathLike) -> list[EvalTask]:
    """The tasks `save_eval_tasks` packed."""
    with np.load(path) as z:
        return [EvalTask(name, task, *(z[f"{i}.{k}"] for k in ("x_ctx", "y_ctx", "x_q", "y_q")), int(k))
                for i, (name, task, k) in enumerate(json.loads(str(z["meta"])))]


def _score(task: EvalTask, scores: np.ndarray) -> float:
    if task.task == "classification":
        return roc_auc(task.y_q, scores)
    return float(r2_score(task.y_q, scores))


def baseline_scores(tasks: list[EvalTask]) -> dict[str, dict[str, float]]:
    """Logistic regression and kNN(15) / ridge on the same splits (NaN filled with 0 = the context mean)."""
    out: dict[str, dict[str, float]] = {}
    for t in tasks:
        xc, xq = np.nan_to_num(t.x_ctx), np.nan_to_num(t.x_q)
        if t.task == "classification":
            res = {}
            for name, est in (("logreg", LogisticRegression(max_iter=500)),
                              ("knn", make_pipeline(StandardScaler(), KNeighborsClassifier(15)))):
                p = est.fit(xc, t.y_ctx).predict_proba(xq)
                full = np.zeros((len(xq), t.n_classes))
                full[:, est.classes_.astype(int)] = p
                res[name] = _score(t, full)
            out[t.name] = res
        else:
            out[t.name] = {"ridge": _score(t, Ridge().fit(xc, t.y_ctx).predict(xq))}
    return out


def feat_scores(model: FEAT, tasks: list[EvalTask], bf16: bool = False) -> dict[str, float]:
    """Zero-shot FEAT on each task, read as the estimators read a table with one member (their defaults
    otherwise: the stacked model, one-vs-rest classes, relevance-ranked features past the width), on the device
    the model is on: the checkpoint is chosen by the reading it will be shipped for."""
    from ..estimators import FEATClassifier, FEATRegressor

    kw = {"n_estimators": 1, "checkpoint": model, "device": str(next(model.parameters()).device),
          "precision": "bf16" if bf16 else "fp32"}
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # the tables' own notes (constant columns, say)
        for t in tasks:
            if t.task == "classification":
                est = FEATClassifier(**kw).fit(t.x_ctx, t.y_ctx)
                p = np.zeros((len(t.x_q), t.n_classes))
                p[:, est.classes_.astype(int)] = est.predict_proba(t.x_q)
                out[t.name] = _score(t, p)
            else:
                out[t.name] = _score(t, FEATRegressor(**kw).fit(t.x_ctx, t.y_ctx).predict(t.x_q))
    return out


def summarise(scores: dict[str, float], tasks: list[EvalTask]) -> dict[str, float]:
    """Mean AUC (classification), mean R^2 clipped at -1 (regression), and their average."""
    kinds = {t.name: t.task for t in tasks}
    auc = [v for k, v in scores.items() if kinds[k] == "classification"]
    r2 = [max(-1.0, v) for k, v in scores.items() if kinds[k] == "regression"]
    res = {"mean_auc": float(np.mean(auc)) if auc else float("nan"), "mean_r2": float(np.mean(r2)) if r2 else float("nan")}
    res["score"] = float(np.nanmean([res["mean_auc"], res["mean_r2"]]))
    return res


@torch.no_grad()
def synthetic_suite(model: FEAT, n_batches: int = 8, cfg: PriorConfig | None = None) -> dict[str, float]:
    """Mean loss terms on fixed held-out prior batches (seed never used for training)."""
    cfg = cfg or PriorConfig(p_real=0.0)
    was = model.training
    model.eval()
    acc: dict[str, list[float]] = {}
    for i in range(n_batches):
        b = make_batch(SYNTH_SEED, i, cfg, None)
        x, y_ctx, yq, x_true, recon, n_classes = batch_tensors(b, next(model.parameters()).device)
        out = model(x, y_ctx, b.task, n_classes)
        _, terms = feat_loss(out, yq, b.task, x_true, recon)
        if b.task == "classification":
            terms["acc"] = float((out.logits.argmax(-1) == yq.long()).float().mean())
        for k, v in terms.items():
            acc.setdefault(k, []).append(v)
    model.train(was)
    return {f"synth_{k}": float(np.mean(v)) for k, v in acc.items()}


def evaluate(model: FEAT, tasks: list[EvalTask]) -> dict[str, float]:
    """Everything logged at an evaluation: synthetic suite, per-table real scores, summary."""
    t0 = time.time()
    res = synthetic_suite(model)
    scores = feat_scores(model, tasks)
    res.update({f"real_{k}": v for k, v in scores.items()})
    res.update(summarise(scores, tasks))
    res["eval_seconds"] = time.time() - t0
    return res
