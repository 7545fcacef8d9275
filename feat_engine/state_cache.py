"""Context states kept between engine runs (docs/design.md, "Context states kept").

A run encodes its context rows into per-block states of a fixed size (about 50 KB per column,
whatever the number of rows), then decodes the query rows from them alone. A fitted estimator reads the
same contexts (its members' local parts, or their whole contexts) at every `predict` call, so it keeps the
states it encoded: a second call, another method on the same rows, one query row at a time, or the next
partition of a Dask frame on the same worker decodes its queries without encoding any context again. The
key is a hash of everything the states depend on, so a hit returns what encoding would have given, bit
for bit. The cache fills up to `MAX_BYTES` and then keeps what it has (scans of the same parts in the same
order would make a least-recently-used cache miss every time); its contents never travel with a pickle.
"""
from __future__ import annotations

import hashlib
import threading
from typing import Any

import torch
from torch import Tensor

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


def cache_setting(model: torch.nn.Module, device: torch.device, cfg: Any, cols: int) -> tuple:
    """What besides the inputs a run's states depend on: the model object, device, precision and chunking."""
    return (id(model), str(device), bool(cfg.autocast_bf16), cfg.row_chunk, cols)
