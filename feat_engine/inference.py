"""The memory-bounded inference runner: the context is encoded once, layer by layer in row and column chunks (peak
memory about one copy of its tokens plus bounded scratch), then the query rows stream through the blocks in chunks,
reading the per-layer states, so that a query's output does not depend on the chunking. Contexts of one shape (a
member's local parts) can share a run as a batch (`run_tables`), and `StateCache` keeps a fitted estimator's context
states between calls (docs/decisions/0005-memory-bounded-inference.md and 0027-kept-context-states.md)."""
from __future__ import annotations

import contextlib
import hashlib
import platform
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
import torch
from torch import Tensor

from .config import InferenceConfig
from .errors import FEATInputError
from .model import FEAT
from .progress import AT_ONCE, ENGINE_PACE, Progress

T, R = TypeVar("T"), TypeVar("R")

# query rows are decoded in blocks of a multiple of this many rows (padded with zero rows): matrix products of a
# handful of rows take other kernels, whose rounding would let a row's prediction depend on how many rows it was
# predicted with (1.6e-2 in a bf16 logit, 1e-6 in fp32; docs/decisions/0001-query-rows-only-read.md)
QUERY_BLOCK = 64

# local parts one engine run encodes as a batch of tables (`run_tables`), by device type. On a CPU one at a time:
# batches of 2, 4 and 8 parts took 0.97x, 1.02x and 1.54x the time of one at a time on an Intel Xeon, 2 and 4 parts
# 1.0x and 1.2x on an AMD EPYC (docs/decisions/0008-gpu-batches.md). On a GPU, where one part of 1,024 rows cannot
# fill the card and its run is bound by kernel launches, 32: one-member fit + predict at 1M rows on an H200 took
# 77.7 s with 1 part a run, 26.6 with 8, 22.5 with 32 and 21.4 with 128 (GPU peak 0.65, 1.2, 3.1 and 10.7 GiB)
TABLES_PER_RUN = {"cpu": 1, "cuda": 32}

# estimated bytes of scratch one (row x column) sequence element costs in a sample-axis
# mixer, per embedding channel (projections, both scan directions, gates); not measured
_MIXER_BYTES_PER_ELEM = 48


@dataclass
class RunResult:
    logits: np.ndarray | None     # (M, max_classes) query logits (absent classes -inf)
    pred: np.ndarray | None       # (M,) standardised regression predictions
    recon: np.ndarray | None      # (N, D) reconstruction of every context row (imputation)
    attention: list[np.ndarray] | None  # per block (heads, C, C), summed over rows


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """'auto' -> CUDA when available, else CPU."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AMX or AVX512-BF16) and torch's kernels may use it (a process
    held to AVX2, `ATEN_CPU_CAPABILITY=avx2`, may not). Elsewhere (AVX2 only) bf16 autocast is emulated, far slower
    than fp32 (docs/decisions/0007-precision.md)."""
    return (torch.backends.cpu.get_cpu_capability() == "AVX512"
            and bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported()))


def bf16_is_fast(device: str | torch.device = "auto") -> bool:
    """Whether bf16 autocast speeds work up on `device`: a GPU, or a CPU that multiplies bf16 natively."""
    return resolve_device(device).type == "cuda" or native_bf16()


PRECISIONS = ("auto", "fp32", "bf16")   # an estimator's or a relation matrix's `precision`


def uses_bf16(precision: str, device: str | torch.device = "auto") -> bool:
    """Whether a `precision` in PRECISIONS runs bf16 autocast on `device`."""
    return precision == "bf16" or (precision == "auto" and bf16_is_fast(device))


def check_precision(precision: str) -> None:
    """Raise FEATInputError naming `precision` unless it is one of PRECISIONS."""
    if precision not in PRECISIONS:
        raise FEATInputError(f"precision must be one of {PRECISIONS}, got {precision!r}")


def precision_config(precision: str, device: str | torch.device = "auto") -> InferenceConfig:
    """The runner's settings for a checked `precision` on `device`: bf16 autocast where `uses_bf16` says so."""
    check_precision(precision)
    return InferenceConfig(autocast_bf16=uses_bf16(precision, device))


def tables_per_run(device: str | torch.device = "auto") -> int:
    """How many local parts of one size an engine run on `device` reads at once (`TABLES_PER_RUN`)."""
    return TABLES_PER_RUN.get(resolve_device(device).type, 1)


def column_chunk(n_rows: int, n_cols: int, d_model: int, budget_bytes: float = 2.0e9) -> int:
    """How many columns the sample-axis mixers take at once for `n_rows` rows within the budget."""
    per_col = n_rows * d_model * _MIXER_BYTES_PER_ELEM
    return int(max(1, min(n_cols, budget_bytes // max(per_col, 1))))


def run_bytes(n_rows: int, n_cols: int, d_model: int) -> int:
    """Peak bytes of one `run` on n_rows context rows of n_cols features, beyond the model and the
    input: one copy of the context tokens (n_rows x (n_cols + 1) x d_model fp32) plus the scratch of
    the sample-axis mixers for the columns `column_chunk` lets them take at once."""
    cols = column_chunk(n_rows, n_cols + 1, d_model)
    return int(n_rows * (n_cols + 1) * d_model * 4 + cols * n_rows * d_model * _MIXER_BYTES_PER_ELEM)


def chunk_rows(cfg: InferenceConfig, columns: int, tables: int, device: torch.device) -> tuple[int, int]:
    """Rows per feature-axis chunk of a context and per query pass for `tables` tables of `columns` tokens a row:
    `cfg.row_chunk` and `cfg.query_chunk`, and on a CPU no more than `cfg.cpu_chunk_tokens` tokens (a query pass at
    least QUERY_BLOCK rows, in whole blocks). Neither changes the numbers: rows never meet in the feature axis, and
    query rows are decoded in whole blocks."""
    if device.type != "cpu":
        return cfg.row_chunk, cfg.query_chunk
    rows = cfg.cpu_chunk_tokens // (columns * tables)
    return (max(1, min(cfg.row_chunk, rows)),
            min(cfg.query_chunk, max(QUERY_BLOCK, rows // QUERY_BLOCK * QUERY_BLOCK)))


def autocast(device: torch.device, enabled: bool):
    """bf16 autocast on `device` where `enabled`, else nothing: the matrix products' precision of an engine run."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def run(model: FEAT, x_ctx: np.ndarray | Tensor, y_ctx: np.ndarray | Tensor | None,
        x_query: np.ndarray | Tensor | None, task: str | None, *args: Any, **kwargs: Any) -> RunResult:
    """Predict one table: (N, D) context (+ labels), then (M, D) query rows; the other arguments and
    what they mean are `run_tables`'."""
    return run_tables(model, [x_ctx], None if y_ctx is None else [y_ctx], [x_query], task, *args, **kwargs)[0]


WARM_UP = (1024, 64, 16)    # context rows, query rows and features of the tables `warm_up` times: a local part's


def warm_up(model: FEAT, device: str | torch.device = "auto", precision: str = "auto") -> None:
    """Read one tiny table at `precision` (the estimators' default), so that the one-time costs of a process's first
    engine run (thread pools, the kernels' set-up: a first 1,024 + 1,024-row run took 0.78 s, the next ones 0.34 s,
    on two cores) are paid at load, not by a first answer; then time WARM_UP tables, the shape of a local part and
    its queries, read one at a time and as many side by side as `map_runs` reads: the engine's first paces
    (`progress.ENGINE_PACE`, so that a fit's time left need not rest on a first answer's one short run) and how the
    pace changes between the two (`progress.AT_ONCE`)."""
    cfg = precision_config(precision, device)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(48, 3)).astype(np.float32)
    run(model, x[:32], (x[:32, 0] > 0).astype(np.float32), x[32:], "classification", n_classes=2, cfg=cfg,
        device=device)
    n, m, d = WARM_UP
    tables = [rng.normal(size=(n + m, d)).astype(np.float32) for _ in range(runs_at_once(2, device))]
    pace = {}
    for batch in {1: tables[:1], len(tables): tables}.values():    # one alone, then side by side (one thread: once)
        began = time.monotonic()
        map_runs(lambda t: run(model, t[:n], (t[:n, 0] > 0).astype(np.float32), t[n:], "classification", n_classes=2,
                               cfg=cfg, device=device), batch, device)
        seconds = time.monotonic() - began
        ENGINE_PACE[len(batch)].add(seconds, len(batch) * (n + m) * (d + 1))
        pace[len(batch)] = seconds / len(batch)
    AT_ONCE[len(tables)] = pace[len(tables)] / pace[1]


@torch.no_grad()
def run_tables(
    model: FEAT,
    x_ctx: Sequence[np.ndarray | Tensor],
    y_ctx: Sequence[np.ndarray | Tensor] | None,
    x_query: Sequence[np.ndarray | Tensor | None],
    task: str | None,
    n_classes: int | None = None,
    column_ids: Tensor | None = None,
    cfg: InferenceConfig = InferenceConfig(),
    device: str | torch.device = "auto",
    want_recon: bool = False,
    want_attention: bool = False,
    progress: Progress | None = None,
    cache: StateCache | None = None,
) -> list[RunResult]:
    """Predict B tables whose (N, D) contexts (+ labels) have one shape and are read with the same column
    identities, each with its own (M_b, D) query rows (`run` is B = 1).

    x values are preprocessed floats with NaN for missing cells. `y_ctx` holds class indices or
    standardised targets; None makes every row unlabelled context (imputation). The contexts are encoded
    as one batch (B, N, D) and the query rows decoded side by side (each table's padded with zero rows to
    the longest), so that one engine run does the work of B (what a GPU needs to be busy:
    `tables_per_run`). A table's results are those of its own `run`, to rounding, and the same bit for bit
    whatever the other tables hold. With a `cache`, a run that wants only the task heads takes each
    context's states from it when it holds them all (the same numbers, bit for bit) and leaves them there
    otherwise, under keys that name B, since other batch sizes round differently."""
    dev = resolve_device(device)
    model = model.to(dev).eval()
    xs = torch.stack([_floats(x) for x in x_ctx])
    B, N, D = xs.shape
    if column_ids is None:
        column_ids = model.column_ids(1, D)
    column_ids = column_ids.to(dev)
    y = None if y_ctx is None else torch.stack([_floats(v).view(-1) for v in y_ctx]).to(dev)
    n_qs = [0 if q is None else len(q) for q in x_query]
    if want_attention and len(set(n_qs)) > 1:
        raise ValueError(f"attention sums need as many query rows in every table, not {n_qs}")
    n_q = max(n_qs)
    row_chunk, query_chunk = chunk_rows(cfg, D + 1, B, dev)
    n_q_chunks = (n_q + query_chunk - 1) // query_chunk
    total = model.cfg.n_blocks + n_q_chunks
    say = progress or (lambda done, tot, msg: None)
    say(0, total, f"encoding {N} context rows" + (f" of {B} tables" if B > 1 else ""))

    label_only = not (want_recon or want_attention)   # the task heads read the query label tokens alone
    with autocast(dev, cfg.autocast_bf16):
        cols = min(cfg.col_chunk, column_chunk(B * N, D + 1, model.cfg.d_model))
        if dev.type == "cpu":
            cols = max(1, min(cols, cfg.cpu_mixer_tokens // (B * N)))
        keys = None
        if cache is not None and label_only and y is not None:
            setting = cache_setting(model, dev, cfg, row_chunk, cols) + (B,)
            keys = [cache.key(xs[b], y[b:b + 1], task, column_ids, setting) for b in range(B)]
        kept = None if keys is None else [cache.get(k) for k in keys]
        h, attn = None, None
        if kept is not None and all(s is not None for s in kept):
            states = [tuple(torch.cat(s, 0) for s in zip(*blocks)) for blocks in zip(*kept)]
            say(model.cfg.n_blocks, total, f"{N} context rows read before")
        else:
            h, states, attn = model.encode_context(
                xs.to(dev), y, task if y is not None else None, column_ids,
                row_chunk=row_chunk, col_chunk=cols, return_attention=want_attention,
                on_block=lambda i: say(i + 1, total, f"context block {i + 1}/{model.cfg.n_blocks} done"),
                label_only=label_only,
            )
            for b, k in enumerate(keys or []):
                cache.put(k, [tuple(s[b:b + 1].clone() for s in st) for st in states])
        recon = model.reconstruct(h).cpu().numpy() if want_recon else None
        del h
        logits, preds = [], []
        if n_q:
            xq = torch.zeros(B, n_q, D)                 # shorter tables padded with zero rows
            for b, q in enumerate(x_query):
                if n_qs[b]:
                    xq[b, :n_qs[b]] = _floats(q)
            for c, i in enumerate(range(0, n_q, query_chunk)):
                chunk = xq[:, i:i + query_chunk]
                m = chunk.shape[1]
                if not want_attention:      # padded rows would count in the attention sums; they change nothing else
                    chunk = torch.cat([chunk, chunk.new_zeros((B, -m % QUERY_BLOCK, D))], 1)
                hq, aq = model.decode_queries(chunk.to(dev), states, column_ids, want_attention, label_only)
                lg, pr = model.heads(hq, task, n_classes)
                if lg is not None:
                    logits.append(lg[:, :m].cpu())
                if pr is not None:
                    preds.append(pr[:, :m].cpu())
                if want_attention:
                    attn = [a + b for a, b in zip(attn, aq)]
                say(model.cfg.n_blocks + c + 1, total, f"query rows {min(n_q, i + query_chunk)}/{n_q}")
    lg = torch.cat(logits, 1).numpy() if logits else None
    pr = torch.cat(preds, 1).numpy() if preds else None
    asked = y is not None and any(q is not None for q in x_query)
    out = []
    for b, m in enumerate(n_qs):
        out.append(RunResult(
            logits=lg[b, :m] if lg is not None else (np.zeros((0, model.cfg.max_classes), np.float32) if asked and task == "classification" else None),
            pred=pr[b, :m] if pr is not None else (np.zeros(0, np.float32) if asked and task == "regression" else None),
            recon=None if recon is None else recon[b],
            attention=None if not want_attention else [(a[b] / (N + m)).cpu().numpy() for a in attn],
        ))
    return out


def _floats(x: np.ndarray | Tensor) -> Tensor:
    """x as a float32 CPU tensor."""
    return torch.as_tensor(np.asarray(x, dtype=np.float32) if not isinstance(x, Tensor) else x).float().cpu()


def runs_at_once(n_runs: int, device: str | torch.device = "auto") -> int:
    """How many of n_runs independent engine runs `map_runs` reads at a time: on a CPU, one per thread of torch's."""
    return max(1, min(torch.get_num_threads(), n_runs)) if resolve_device(device).type == "cpu" else 1


def map_runs(fn: Callable[[T], R], items: Sequence[T], device: str | torch.device = "auto",
             on_wait: Callable[[], None] | None = None) -> list[R]:
    """`[fn(item) for item in items]` for independent engine runs: on a CPU, as many runs at once as torch has
    threads (at most one per item), torch's threads shared out among them: one engine run leaves cores idle
    in its many small ops (docs/decisions/0006-cpu-speed.md). Results equal the sequential ones to rounding.
    `on_wait` is called on the caller's thread while it waits (to relay the workers' progress to widgets that
    accept no other thread)."""
    threads, workers = torch.get_num_threads(), runs_at_once(len(items), device)
    if workers < 2:
        return [fn(item) for item in items]
    pool = ThreadPoolExecutor(workers, initializer=torch.set_num_threads, initargs=(threads // workers,))
    try:
        futures = [pool.submit(fn, item) for item in items]
        while True:
            done, pending = wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)
            if on_wait is not None:
                on_wait()
            failed = [f.exception() for f in done if f.exception() is not None]
            if failed:
                raise failed[0]
            if not pending:
                return [f.result() for f in futures]
    finally:
        pool.shutdown(cancel_futures=True)
        torch.set_num_threads(threads)                  # threads started later read the workers' setting otherwise


# --------------------------------------------------------------------------- context states kept

MAX_BYTES = 1024 * 2**20    # about 1,760 local parts of 11 features and the label (0.61 MB each)


def _nbytes(obj: Any) -> int:
    if isinstance(obj, Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(o) for o in obj)
    return 0


class StateCache:
    """Thread-safe map from a run's context (and everything else its states depend on) to those states."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self._items: dict[bytes, list[Any]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(x_ctx: Tensor, y: Tensor | None, task: str | None, column_ids: Tensor, setting: tuple) -> bytes:
        """A digest of the context values, labels, task, column identities and the run's `setting`
        (model, device, precision and chunking)."""
        h = hashlib.blake2b(digest_size=20)
        for t in (x_ctx, y, column_ids):
            if t is not None:
                a = t.detach().cpu().contiguous()
                h.update(str((a.dtype, tuple(a.shape))).encode())
                h.update(a.view(torch.uint8).numpy())
        h.update(repr((task, setting)).encode())
        return h.digest()

    def get(self, key: bytes) -> list[Any] | None:
        return self._items.get(key)

    def put(self, key: bytes, states: list[Any]) -> None:
        """Keep `states` under `key` while the cache has room for them."""
        size = _nbytes(states)
        with self._lock:
            if key not in self._items and self._bytes + size <= self.max_bytes:
                self._items[key] = states
                self._bytes += size

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __getstate__(self) -> dict[str, int]:
        return {"max_bytes": self.max_bytes}          # the states stay where they were computed

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__(state["max_bytes"])


def cache_setting(model: torch.nn.Module, device: torch.device, cfg: Any, row_chunk: int, cols: int) -> tuple:
    """What besides the inputs a run's states depend on: the model object, device, precision and chunking."""
    return (id(model), str(device), bool(cfg.autocast_bf16), row_chunk, cols)
