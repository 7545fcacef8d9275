"""The hybrid SCM prior (paper section 4.5.1), with what real tables add.

    (i)   scale-free DAG by preferential attachment: hubs emerge
    (ii)  roots from M latent prototypes: x_root = w_i^T P, w_i ~ Dir(alpha)
    (iii) x_j = f_j(x_Pa(j)) + eps, eps ~ N(0, sigma^2 |x~_j|^gamma), f_j an MLP,
          a tree (step function) or a linear map
    (iv)  the target is read from intermediate nodes by a sparse random teacher MLP
          with a random SNR: nominal classes from its logits, quantile classes, or a
          continuous value; continuous marginals warped by Kumaraswamy CDFs

Beyond the paper (`sample_scm`): teachers that read the observed features directly, nominal columns of many
levels, categorical codes, missing values, constant and duplicated columns. Every table is permuted over
rows, features and class labels by the caller (`batches.py`; docs/decisions/0010-prior.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACTIVATIONS = {
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0.0),
    "sin": np.sin,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "abs": np.abs,
    "square": lambda x: np.clip(x, -4, 4) ** 2,
    "identity": lambda x: x,
    "step": lambda x: (x > 0).astype(float),
}


@dataclass
class SCMTable:
    """One synthetic table. X: (N, D) float with NaN; y: (N,) class index or float; parents: D x D
    adjacency among the observed features (parents[i, j] = feature i is an ancestor-edge parent of j)."""

    X: np.ndarray
    y: np.ndarray
    task: str
    n_classes: int
    edges: np.ndarray
    mechanism: str
    nominal: np.ndarray        # indices of the features whose codes are unordered levels


def _standardise(v: np.ndarray) -> np.ndarray:
    s = v.std()
    return (v - v.mean()) / (s if s > 1e-8 else 1.0)


def scale_free_dag(n_nodes: int, rng: np.random.Generator, n_roots: int) -> list[list[int]]:
    """Parents of each node in topological order; node j picks parents with probability
    proportional to (out-degree + 1)^alpha (preferential attachment)."""
    alpha = rng.uniform(0.5, 1.5)
    mean_parents = rng.uniform(1.0, 3.0)
    out_deg = np.zeros(n_nodes)
    parents: list[list[int]] = []
    for j in range(n_nodes):
        if j < n_roots:
            parents.append([])
            continue
        k = min(j, 1 + rng.poisson(mean_parents - 1.0))
        p = (out_deg[:j] + 1.0) ** alpha
        pa = rng.choice(j, size=k, replace=False, p=p / p.sum())
        out_deg[pa] += 1
        parents.append(sorted(int(i) for i in pa))
    return parents


def prototype_roots(n_rows: int, n_roots: int, rng: np.random.Generator) -> np.ndarray:
    """x_root = w_i^T P with w_i ~ Dir(alpha): clustered rows, plus a little isotropic noise."""
    m = int(rng.integers(2, 9))
    P = rng.normal(0.0, 1.0, size=(m, n_roots)) * rng.uniform(0.5, 3.0)
    w = rng.dirichlet(np.full(m, np.exp(rng.uniform(np.log(0.05), np.log(2.0)))), size=n_rows)
    return w @ P + rng.normal(0.0, rng.uniform(0.05, 0.5), size=(n_rows, n_roots))


def _mechanism(inp: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    """f_j applied to the standardised parent matrix (N, k) -> (N,)."""
    k = inp.shape[1]
    if kind == "linear":
        return inp @ rng.normal(0, 1, size=k)
    if kind == "tree":  # sum of a few random axis-aligned step functions
        out = np.zeros(len(inp))
        for _ in range(int(rng.integers(1, 4))):
            c = int(rng.integers(k))
            thr = rng.choice(inp[:, c]) if len(inp) else 0.0
            out += np.where(inp[:, c] > thr, rng.normal(), rng.normal())
        return out
    h = int(rng.integers(4, 17))
    act = ACTIVATIONS[rng.choice(list(ACTIVATIONS))]
    W1 = rng.normal(0, 1.0 / np.sqrt(k), size=(k, h)) * rng.uniform(0.5, 2.5)
    return act(inp @ W1 + rng.normal(0, 0.5, size=h)) @ rng.normal(0, 1.0 / np.sqrt(h), size=h)


def kumaraswamy_warp(v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Monotone warp F(u) = 1 - (1 - u^a)^b of the min-max scaled column; a, b log-uniform on [0.2, 5]."""
    a, b = np.exp(rng.uniform(np.log(0.2), np.log(5.0), size=2))
    lo, hi = v.min(), v.max()
    u = (v - lo) / (hi - lo + 1e-12) * 0.98 + 0.01
    return 1.0 - (1.0 - u ** a) ** b


def _categorise(v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Quantile-bin a column into max(2, round(Gamma(1, 10))) categories, coded in random order."""
    k = int(min(30, max(2, round(rng.gamma(1.0, 10.0)))))
    cuts = np.quantile(v, np.sort(rng.uniform(0, 1, size=k - 1)))
    codes = np.searchsorted(cuts, v)
    return rng.permutation(k)[codes].astype(float)


def _teacher(Z: np.ndarray, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """Sparse random teacher MLP reading a few intermediate nodes."""
    k = Z.shape[1]
    use = rng.choice(k, size=int(rng.integers(1, min(k, 6) + 1)), replace=False)
    h = int(rng.integers(4, 33))
    W1 = rng.normal(0, 1, size=(len(use), h)) * (rng.uniform(size=(len(use), h)) < 0.6)
    act = ACTIVATIONS[rng.choice(["tanh", "relu", "sin", "abs", "identity", "sigmoid"])]
    hidden = act(Z[:, use] @ W1 / np.sqrt(len(use)) + rng.normal(0, 0.5, size=h))
    return hidden @ rng.normal(0, 1, size=(h, n_out))


def _additive_teacher(X_obs: np.ndarray, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """GAM teacher: sum_j w_j g_j(x_j) over a random subset of the observed features, each g_j
    the identity or a random smooth 1-D map; feature importances spread log-normally."""
    use = rng.choice(X_obs.shape[1], size=int(rng.integers(1, X_obs.shape[1] + 1)), replace=False)
    G = np.stack([X_obs[:, j] if rng.uniform() < 0.5 else _standardise(_mechanism(X_obs[:, [j]], "mlp", rng))
                  for j in use], 1)
    w = rng.normal(size=(len(use), n_out)) * np.exp(rng.normal(0.0, 0.75, size=(len(use), 1)))
    return G @ w


def _linear_teacher(X_obs: np.ndarray, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """Dense linear teacher: every observed feature with a standard-normal weight."""
    return X_obs @ rng.normal(size=(X_obs.shape[1], n_out))


def _tree_teacher(X_obs: np.ndarray, n_out: int, rng: np.random.Generator) -> np.ndarray:
    """Sum of 1-32 random oblivious trees of depth 1-4 over the observed features: each level
    splits one feature at a random quantile of its values, each leaf holds N(0, 1) outputs."""
    out = np.zeros((len(X_obs), n_out))
    for _ in range(int(rng.integers(1, 33))):
        depth = int(rng.integers(1, 5))
        feats = rng.choice(X_obs.shape[1], size=depth)
        thresholds = [np.quantile(X_obs[:, f], rng.uniform(0.1, 0.9)) for f in feats]
        leaf = (X_obs[:, feats] > thresholds) @ (1 << np.arange(depth))
        out += rng.normal(size=(2 ** depth, n_out))[leaf]
    return out


def _nominal_levels(n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """(level of each row, number of levels): L log-uniform on [3, 200], Zipf-like frequencies."""
    n_levels = int(np.exp(rng.uniform(np.log(3), np.log(200))))
    p = 1.0 / np.arange(1, n_levels + 1) ** rng.uniform(0.5, 1.2)
    return rng.choice(n_levels, size=n_rows, p=p / p.sum()), n_levels


def _missing(X: np.ndarray, rng: np.random.Generator, max_rate: float) -> None:
    """MCAR everywhere, plus MAR (depends on another column) or MNAR (on the value itself) columns."""
    n, d = X.shape
    X[rng.uniform(size=X.shape) < rng.uniform(0, max_rate)] = np.nan
    for j in rng.choice(d, size=int(rng.integers(0, max(1, d // 3) + 1)), replace=False):
        rate = rng.uniform(0.05, 0.5)
        src = X[:, j] if rng.uniform() < 0.5 else X[:, int(rng.integers(d))]   # MNAR or MAR
        src = np.nan_to_num(src, nan=np.nanmean(src) if np.isfinite(src).any() else 0.0)
        thr = np.quantile(src, 1 - rate)
        X[(src >= thr) if rng.uniform() < 0.5 else (src <= np.quantile(src, rate)), j] = np.nan


def sample_scm(
    rng: np.random.Generator, n_rows: int, n_features: int, task: str, n_classes: int = 2,
    p_categorical: float = 0.3, p_missing: float = 0.5, max_missing_rate: float = 0.3,
    p_additive: float = 0.0, p_linear: float = 0.0, p_tree: float = 0.0, p_nominal: float = 0.0,
) -> SCMTable:
    """Draw one table from the hybrid SCM prior. The p_* shares of the observed-feature
    teachers add up to at most 1; a share of 0 leaves the random stream as it was.

    Beyond the paper, the teacher may instead read the observed features directly: additive
    (p_additive: a GAM, y = sum_j w_j g_j(x_j), g_j linear or a smooth 1-D map), dense linear
    (p_linear: every feature with a Gaussian weight), or a sum of random oblivious trees
    (p_tree: axis-aligned splits at data quantiles, as in TabPFN v2's tree-based SCMs); these
    are the dependences real tables are full of and the sparse teacher rarely draws. With
    probability p_nominal one feature is a nominal column of 3-200 levels (Zipf-like
    frequencies) whose per-level effect carries a random share of the target. Also:
    categorical columns (integer codes in random order, as the preprocessing presents them at
    inference), missing values (MCAR, MAR, MNAR), constant and duplicated columns."""
    n_hidden = int(rng.integers(0, max(2, n_features // 2) + 1))
    n_nodes = n_features + n_hidden + 1
    n_roots = int(rng.integers(1, max(2, n_nodes // 3) + 1))
    parents = scale_free_dag(n_nodes, rng, n_roots)
    Z = np.empty((n_rows, n_nodes))
    Z[:, :n_roots] = prototype_roots(n_rows, n_roots, rng)
    family = rng.choice(["mlp", "tree", "linear", "mixed"], p=[0.45, 0.2, 0.1, 0.25])
    sigma = np.exp(rng.uniform(np.log(1e-2), np.log(0.5)))
    gamma = rng.uniform(0.0, 1.0)
    for j in range(n_roots, n_nodes):
        kind = rng.choice(["mlp", "tree", "linear"]) if family == "mixed" else family
        x_tilde = _standardise(_mechanism(_standardise_cols(Z[:, parents[j]]), kind, rng))
        Z[:, j] = x_tilde + rng.normal(size=n_rows) * sigma * np.abs(x_tilde) ** (gamma / 2.0)

    # observed features: a random subset of the non-root-only pool, hubs and leaves alike
    feat_nodes = np.sort(rng.choice(n_nodes, size=n_features, replace=False))
    Zs = _standardise_cols(Z)
    u = rng.uniform() if p_additive + p_linear + p_tree > 0 else 1.0
    direct = next((f for f, edge in ((_additive_teacher, p_additive), (_linear_teacher, p_additive + p_linear),
                                     (_tree_teacher, p_additive + p_linear + p_tree)) if u < edge), None)
    levels = _nominal_levels(n_rows, rng) if p_nominal > 0 and rng.uniform() < p_nominal else None
    share = rng.uniform(0.2, 0.8) if levels is not None else 0.0   # of the target's variance

    def teacher(n_out: int) -> np.ndarray:
        out = direct(Zs[:, feat_nodes], n_out, rng) if direct else _teacher(Zs, n_out, rng)
        if levels is None:
            return out
        effect = rng.normal(size=(levels[1], n_out))[levels[0]]
        return np.sqrt(1 - share) * _standardise_cols(out) + np.sqrt(share) * _standardise_cols(effect)
    snr = np.exp(rng.uniform(np.log(0.3), np.log(30.0)))
    if task == "regression":
        t = _standardise(teacher(1)[:, 0])
        y = t + rng.normal(size=n_rows) / snr
        if rng.uniform() < 0.3:
            y = kumaraswamy_warp(y, rng)
        n_cls = 0
    else:
        if rng.uniform() < 0.5:   # nominal: argmax of teacher logits, with class biases (imbalance)
            logits = _standardise_cols(teacher(n_classes)) * snr
            logits += rng.normal(0, 1.0, size=n_classes) + rng.gumbel(size=(n_rows, n_classes))
            y = logits.argmax(1)
        else:                     # random quantiles of a continuous teacher output
            t = _standardise(teacher(1)[:, 0]) + rng.normal(size=n_rows) / snr
            cuts = np.quantile(t, np.sort(rng.uniform(0.05, 0.95, size=n_classes - 1)))
            y = np.searchsorted(cuts, t)
        y = rng.permutation(n_classes)[y].astype(float)
        n_cls = n_classes

    X = Z[:, feat_nodes].copy()
    for j in range(n_features):
        if rng.uniform() < 0.3:
            X[:, j] = kumaraswamy_warp(X[:, j], rng)
    nominal = set()
    if rng.uniform() < p_categorical:
        for j in rng.choice(n_features, size=int(rng.integers(1, n_features + 1)), replace=False):
            X[:, j] = _categorise(X[:, j], rng)
            nominal.add(int(j))
    if levels is not None:
        j = int(rng.integers(n_features))
        X[:, j] = rng.permutation(levels[1])[levels[0]].astype(float)
        nominal.add(j)
    if n_features >= 3 and rng.uniform() < 0.05:                                     # duplicated column
        src = int(rng.integers(n_features))
        dst = int(rng.integers(n_features))
        X[:, dst] = X[:, src]
        (nominal.add if src in nominal else nominal.discard)(dst)
    if n_features >= 3 and rng.uniform() < 0.03:                                     # constant column
        X[:, int(rng.integers(n_features))] = rng.normal()
    if rng.uniform() < p_missing:
        _missing(X, rng, max_missing_rate)

    edges = np.zeros((n_features, n_features), dtype=bool)
    pos = {int(v): i for i, v in enumerate(feat_nodes)}
    for j_node, pa in enumerate(parents):
        if j_node in pos:
            for p in pa:
                if p in pos:
                    edges[pos[p], pos[j_node]] = True
    nominal = np.array(sorted(j for j in nominal if len(np.unique(X[:, j][np.isfinite(X[:, j])])) >= 3), dtype=np.int64)
    return SCMTable(X, y, task, n_cls, edges, str(family), nominal)


def _standardise_cols(M: np.ndarray) -> np.ndarray:
    if M.shape[1] == 0:
        return M
    s = M.std(0)
    return (M - M.mean(0)) / np.where(s > 1e-8, s, 1.0)
