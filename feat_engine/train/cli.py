"""`feat-pretrain --config CONFIG [--resume PATH | --init-from CKPT] [--hours H] [--set KEY=VALUE ...]`
(also `python -m feat_engine.train`).

Under `torchrun --nproc_per_node=2` it trains data-parallel with the gloo backend.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from ..config import TrainConfig
from .loop import Trainer


def load_config(path: str | None) -> TrainConfig:
    """TrainConfig from a YAML or JSON file (missing keys keep their defaults)."""
    if path is None:
        return TrainConfig()
    text = Path(path).read_text()
    data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    return TrainConfig.from_dict(data or {})


def apply_overrides(cfg: TrainConfig, pairs: list[str]) -> TrainConfig:
    """`prior.p_real=0`-style overrides (dotted keys, YAML values) applied to a TrainConfig."""
    data = cfg.to_dict()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        *parents, leaf = key.split(".")
        node = data
        for k in parents:
            node = node.get(k) if isinstance(node.get(k), dict) else None
            if node is None:
                raise ValueError(f"--set {pair}: {key!r} is not a config section")
        if not sep or leaf not in node:
            raise ValueError(f"--set {pair}: expected KEY=VALUE with KEY one of the config's fields")
        node[leaf] = yaml.safe_load(value)
    return TrainConfig.from_dict(data)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="feat-pretrain", description="Pretrain FEAT on the hybrid SCM prior and real tables.")
    p.add_argument("--config", help="YAML or JSON TrainConfig")
    p.add_argument("--resume", help="last.pt of a run to continue exactly")
    p.add_argument("--init-from", help="a FEAT checkpoint (e.g. assets/feat-small.pt) to continue from with a fresh optimiser")
    p.add_argument("--hours", type=float, help="stop after this many hours (checkpointing on the way)")
    p.add_argument("--out-dir", help="override the config's out_dir")
    p.add_argument("--max-steps", type=int, help="override the config's max_steps")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config field, e.g. --set prior.p_real=0 --set threads=1")
    a = p.parse_args(argv)
    cfg = load_config(a.config)
    over = [f"{k}={v}" for k, v in (("out_dir", a.out_dir), ("max_steps", a.max_steps)) if v is not None]
    try:
        cfg = apply_overrides(cfg, [*a.set, *over])
    except ValueError as e:
        p.error(str(e))
    Trainer(cfg, resume=a.resume, init_from=a.init_from).fit(a.hours)


if __name__ == "__main__":
    main()
