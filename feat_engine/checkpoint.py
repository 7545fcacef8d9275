"""Save and load FEAT weights with their config, a format version and a sha256 of the weights.

A missing, truncated, corrupted or mismatched file raises `CheckpointError`, whose
message names the file and the problem. Loaded models are kept in a cache per file
(`load_model_and_meta`); edge heads live beside their checkpoint (docs/decisions/0009-checkpoint-format.md).
Two checkpoints ship, by name: "small" (the default) and "fast", its student at about half the cost per row read
(docs/decisions/0043-student.md).
"""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import torch

from .config import ModelConfig, PriorConfig
from .errors import CheckpointError
from .inference import warm_up
from .model import FEAT
from .model.edge_head import EdgeHead

FORMAT = "feat-checkpoint"
VERSION = 1
ASSETS = Path(__file__).resolve().parent.parent / "assets"
SHIPPED = {"small": ASSETS / "feat-small.pt", "fast": ASSETS / "feat-fast.pt"}
DEFAULT_CHECKPOINT = SHIPPED["small"]
EDGE_FORMAT = "feat-edge-head"


def checkpoint_path(checkpoint: str | os.PathLike | None) -> Path:
    """The file a `checkpoint` argument names: None is the default, "small" and "fast" the shipped ones, else a path."""
    if checkpoint is None:
        return DEFAULT_CHECKPOINT
    return SHIPPED.get(checkpoint, Path(checkpoint)) if isinstance(checkpoint, str) else Path(checkpoint)


def weights_sha256(state_dict: dict[str, torch.Tensor]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of every tensor, in name order."""
    h = hashlib.sha256()
    for k in sorted(state_dict):
        t = state_dict[k].detach().cpu().contiguous()
        h.update(f"{k}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def save_checkpoint(path: str | os.PathLike, model: FEAT, meta: dict[str, Any] | None = None, half: bool = False) -> str:
    """Write model weights (fp16 if `half`), config and meta atomically. Returns the sha256."""
    sd = {k: (v.half() if half and v.is_floating_point() else v).detach().cpu().clone() for k, v in model.state_dict().items()}
    digest = weights_sha256(sd)
    blob = {"format": FORMAT, "version": VERSION, "config": model.cfg.to_dict(), "meta": meta or {},
            "state_dict": sd, "sha256": digest}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(blob, tmp)
    os.replace(tmp, path)
    return digest


def read_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Load and verify a checkpoint file; raises CheckpointError naming the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path}: file not found")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated zip, garbage bytes, unpickling refused ...
        raise CheckpointError(f"checkpoint {path}: cannot be read ({type(e).__name__}: {e}); the file is truncated or not a FEAT checkpoint") from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path}: not a FEAT checkpoint (no '{FORMAT}' header)")
    if blob.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path}: format version {blob.get('version')} is not supported (expected {VERSION})")
    sd, cfg = blob.get("state_dict"), blob.get("config")
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise CheckpointError(f"checkpoint {path}: no weights (the 'state_dict' entry is missing or not a dict of tensors)")
    if not isinstance(cfg, dict):
        raise CheckpointError(f"checkpoint {path}: no model config (the 'config' entry is missing or not a dict)")
    digest = weights_sha256(sd)
    if digest != blob.get("sha256"):
        raise CheckpointError(f"checkpoint {path}: sha256 mismatch (stored {str(blob.get('sha256'))[:12]}..., computed {digest[:12]}...): the weights are corrupted")
    return blob


def load_checkpoint(path: str | os.PathLike | None = None, device: str | torch.device = "cpu") -> tuple[FEAT, dict[str, Any]]:
    """Build the model from a checkpoint (a file, a shipped one's name, or None for the default) in eval mode,
    fp32 weights."""
    path = checkpoint_path(path)
    blob = read_checkpoint(path)
    model = FEAT(ModelConfig.from_dict(blob["config"]))
    sd = {k: (v.float() if v.is_floating_point() else v) for k, v in blob["state_dict"].items()}
    try:
        model.load_state_dict(sd)
    except RuntimeError as e:
        raise CheckpointError(f"checkpoint {path}: weights do not match its config ({str(e).splitlines()[0]})") from None
    return model.to(device).eval(), blob["meta"]


def edge_head_path(checkpoint: str | os.PathLike | None = None) -> Path:
    """Where a checkpoint's edge head lives: beside it, `<name>-edges.pt`."""
    p = checkpoint_path(checkpoint)
    return p.with_name(p.stem + "-edges.pt")


def save_edge_head(path: str | os.PathLike, head: EdgeHead, backbone: str | os.PathLike,
                   meta: dict[str, Any] | None = None) -> None:
    """Write an edge head (fp16 weights) with the sha256 of the backbone checkpoint whose tokens it reads."""
    blob = {"format": EDGE_FORMAT, "version": VERSION, "d_model": head.tokens[0][0].in_features, "k": head.k,
            "backbone_sha256": read_checkpoint(backbone)["sha256"], "meta": meta or {},
            "state_dict": {k: v.detach().cpu().half().clone() for k, v in head.state_dict().items()}}
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(blob, tmp)
    os.replace(tmp, path)


def load_edge_head(path: str | os.PathLike, backbone: str | os.PathLike | None = None) -> tuple[EdgeHead, dict[str, Any]]:
    """An edge head in eval mode and its meta; with `backbone` (a checkpoint file), check that the head was
    trained on that backbone's tokens. Raises CheckpointError naming the file and the problem."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"edge head {path}: file not found (train one with `python -m feat_engine.train.edges`)")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise CheckpointError(f"edge head {path}: cannot be read ({type(e).__name__}: {e})") from None
    if not isinstance(blob, dict) or blob.get("format") != EDGE_FORMAT:
        raise CheckpointError(f"edge head {path}: not a FEAT edge head (no '{EDGE_FORMAT}' header)")
    if backbone is not None and blob["backbone_sha256"] != read_checkpoint(backbone)["sha256"]:
        raise CheckpointError(f"edge head {path}: trained on another backbone than {backbone} "
                              f"(sha256 {blob['backbone_sha256'][:12]}...); train one for it with "
                              "`python -m feat_engine.train.edges`")
    head = EdgeHead(blob["d_model"], blob["k"])
    try:
        head.load_state_dict({k: v.float() for k, v in blob["state_dict"].items()})
    except RuntimeError as e:
        raise CheckpointError(f"edge head {path}: weights do not match its shape ({str(e).splitlines()[0]})") from None
    return head.eval(), blob["meta"]


# --------------------------------------------------------------------------- loaded models, kept

_CACHE: dict[tuple, tuple[FEAT, dict[str, Any]]] = {}
_LOCK = threading.Lock()


def load_model_and_meta(path: str | os.PathLike | None = None) -> tuple[FEAT, dict[str, Any]]:
    """Load a checkpoint once per (path, mtime, size) and keep it in a module-level cache, its first engine read made
    (`inference.warm_up`: the loader of models that predict; training and tools reading a checkpoint's weights or meta
    use `load_checkpoint`).

    The key includes the file's mtime and size, so a checkpoint replaced on disk is reloaded.
    """
    p = checkpoint_path(path).resolve()
    st = p.stat() if p.is_file() else None
    key = (str(p), st.st_mtime_ns if st else None, st.st_size if st else None)
    with _LOCK:
        if key not in _CACHE:
            for old in [k for k in _CACHE if k[0] == key[0]]:
                del _CACHE[old]
            _CACHE[key] = load_checkpoint(p)       # raises CheckpointError naming the file
            warm_up(_CACHE[key][0], "cpu")
        return _CACHE[key]


def load_model(path: str | os.PathLike | None = None) -> FEAT:
    """The FEAT model of a checkpoint (default: the shipped assets/feat-small.pt), cached.

    Parameters
    ----------
    path : str, path-like or None, default None
        The checkpoint file, or a shipped one by name: "small" (assets/feat-small.pt, also None) or "fast"
        (assets/feat-fast.pt). It is loaded once per (path, modification time, size), so a file replaced on
        disk is read again. A missing, truncated, corrupted
        or mismatched file raises `CheckpointError` naming the file and the problem.

    Returns
    -------
    FEAT
        The model in eval mode with fp32 weights on the CPU; the cached object itself, shared by every call
        for the same unchanged file.
    """
    return load_model_and_meta(path)[0]


def resolve_model(checkpoint: str | os.PathLike | FEAT | None) -> tuple[FEAT, dict[str, Any]]:
    """An estimator's `checkpoint` parameter (path, shipped name, loaded model or None) -> (model, meta)."""
    if isinstance(checkpoint, FEAT):
        return checkpoint.eval(), {}
    return load_model_and_meta(checkpoint)


def trained_max_features(meta: dict[str, Any]) -> int:
    """Widest table the checkpoint was pretrained on (its prior config, else the default prior)."""
    prior = meta.get("prior") or meta.get("config", {}).get("prior") or {}
    return int(prior.get("max_features", PriorConfig().max_features))
