"""checkpoint.py: save/load round trips and the CheckpointError for bad files (issue 2, tests bullet 6)."""
from __future__ import annotations

import pytest
import torch

from feat_engine import FEAT, ModelConfig
from feat_engine.checkpoint import FORMAT, VERSION, load_checkpoint, read_checkpoint, save_checkpoint, weights_sha256
from feat_engine.errors import CheckpointError

SMALL = ModelConfig(d_model=16, n_blocks=4, attn_heads=2, d_state=4, ssm_heads=2, chunk_size=8,
                    gla_heads=2, d_hidden=16, dfe_rank=4, max_classes=10)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return FEAT(SMALL).eval()


@pytest.fixture(scope="module")
def batch():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 30, 4, generator=g)
    x[0, 3, 1] = float("nan")
    return x, torch.randint(0, 3, (2, 20), generator=g).float()


@pytest.fixture()
def saved(tmp_path, model):
    path = tmp_path / "model.pt"
    save_checkpoint(path, model, meta={"note": "test", "steps": 3})
    return path


def predict(m, batch):
    x, y = batch
    with torch.no_grad():
        out = m(x, y, "classification", 3)
    return out.logits, out.recon


def test_round_trip_fp32_identical(tmp_path, model, batch):
    path = tmp_path / "sub" / "dir" / "m.pt"          # parents are created
    digest = save_checkpoint(path, model, meta={"k": 1})
    loaded, meta = load_checkpoint(path)
    assert meta == {"k": 1}
    assert loaded.cfg == model.cfg and not loaded.training
    for k, v in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[k], v), k
    (l0, r0), (l1, r1) = predict(model, batch), predict(loaded, batch)
    assert torch.equal(l0, l1) and torch.equal(r0, r1)
    assert digest == read_checkpoint(path)["sha256"] == weights_sha256(model.state_dict())
    assert not path.with_suffix(".pt.tmp").exists()    # atomic write left nothing behind


def test_round_trip_half(tmp_path, model, batch):
    path = tmp_path / "half.pt"
    save_checkpoint(path, model, half=True)
    blob = read_checkpoint(path)
    assert all(v.dtype == torch.float16 for v in blob["state_dict"].values() if v.is_floating_point())
    assert path.stat().st_size < 0.7 * (save_checkpoint(tmp_path / "full.pt", model) and (tmp_path / "full.pt").stat().st_size)
    loaded, _ = load_checkpoint(path)
    assert all(v.dtype == torch.float32 for v in loaded.state_dict().values() if v.is_floating_point())
    # identical to the model with fp16-rounded weights ...
    rounded = FEAT(SMALL).eval()
    rounded.load_state_dict({k: v.half().float() if v.is_floating_point() else v for k, v in model.state_dict().items()})
    (lh, rh), (lr, rr) = predict(loaded, batch), predict(rounded, batch)
    assert torch.equal(lh, lr) and torch.equal(rh, rr)
    # ... and close to the fp32 model
    l0, _ = predict(model, batch)
    assert (lh[..., :3] - l0[..., :3]).abs().max() < 1e-2
    # saving a loaded half checkpoint again is stable
    save_checkpoint(tmp_path / "again.pt", loaded, half=True)
    assert read_checkpoint(tmp_path / "again.pt")["sha256"] == blob["sha256"]


def _assert_error(path, *words):
    with pytest.raises(CheckpointError) as ei:
        load_checkpoint(path)
    msg = str(ei.value)
    assert str(path) in msg, f"message does not name the file: {msg}"
    for w in words:
        assert w in msg.lower(), f"{w!r} not in {msg!r}"
    return msg


def test_missing_file(tmp_path):
    _assert_error(tmp_path / "nope.pt", "not found")
    _assert_error(tmp_path, "not found")           # a directory is not a checkpoint file


@pytest.mark.parametrize("keep", [0, 10, 0.5, -1])
def test_truncated_file(saved, keep):
    data = saved.read_bytes()
    n = int(len(data) * keep) if isinstance(keep, float) else (keep if keep >= 0 else len(data) - 1)
    saved.write_bytes(data[:n])
    _assert_error(saved, "truncated")


def test_garbage_file(tmp_path):
    path = tmp_path / "garbage.pt"
    path.write_bytes(torch.randint(0, 256, (5000,), generator=torch.Generator().manual_seed(0)).to(torch.uint8).numpy().tobytes())
    _assert_error(path, "cannot be read")
    text = tmp_path / "model.pt"
    text.write_text("definitely not a checkpoint\n")
    _assert_error(text, "cannot be read")


class Evil:
    """An arbitrary class: weights_only loading must refuse to unpickle it."""


def test_pickle_is_refused(tmp_path):
    """weights_only loading: an arbitrary pickled object is refused, not executed."""
    path = tmp_path / "evil.pt"
    torch.save({"format": FORMAT, "version": VERSION, "obj": Evil()}, path)
    _assert_error(path, "cannot be read")


@pytest.mark.parametrize("blob", [
    {"weights": {}},
    {"format": "something-else", "version": VERSION},
    [1, 2, 3],
    torch.zeros(3),
], ids=["no-header", "other-format", "list", "tensor"])
def test_wrong_format(tmp_path, blob):
    path = tmp_path / "other.pt"
    torch.save(blob, path)
    _assert_error(path, "not a feat checkpoint")


def test_plain_state_dict_is_wrong_format(tmp_path, model):
    path = tmp_path / "sd.pt"
    torch.save(model.state_dict(), path)
    _assert_error(path, "not a feat checkpoint")


def test_wrong_version(tmp_path, saved):
    blob = torch.load(saved, weights_only=True)
    blob["version"] = VERSION + 1
    torch.save(blob, saved)
    _assert_error(saved, "version")


def test_sha_mismatch(saved):
    blob = torch.load(saved, weights_only=True)
    name = next(k for k, v in blob["state_dict"].items() if v.is_floating_point())
    blob["state_dict"][name] = blob["state_dict"][name].clone()
    blob["state_dict"][name].view(-1)[0] += 1e-3          # one weight changed, sha kept
    torch.save(blob, saved)
    _assert_error(saved, "sha256")


def test_flipped_byte_detected(saved):
    """A byte flipped inside the weight data: either the archive check or the sha catches it."""
    data = bytearray(saved.read_bytes())
    blob = torch.load(saved, weights_only=True)
    raw = blob["state_dict"]["cells.mask_token"].numpy().tobytes()
    at = bytes(data).find(raw)
    assert at > 0
    data[at + 2] ^= 0xFF
    saved.write_bytes(bytes(data))
    _assert_error(saved)


def test_config_mismatch(saved):
    blob = torch.load(saved, weights_only=True)
    blob["config"]["d_model"] = 24        # weights are for d_model 16
    torch.save(blob, saved)
    _assert_error(saved, "do not match")


@pytest.mark.parametrize("key,value", [("state_dict", None), ("state_dict", [1, 2]), ("config", None), ("config", "d_model=16")])
def test_missing_or_malformed_entries_are_checkpoint_errors(saved, key, value):
    """A header with no weights or no config must still raise CheckpointError (not KeyError/TypeError)."""
    blob = torch.load(saved, weights_only=True)
    if value is None:
        del blob[key]
    else:
        blob[key] = value
    torch.save(blob, saved)
    _assert_error(saved)


def test_the_shipped_checkpoints_by_name():
    """checkpoint="fast" and "small" name the shipped files; "fast" is feat-small's student (narrower blocks, same
    width), distilled from the shipped feat-small (its meta names the teacher's weights), stored in half precision."""
    from feat_engine.checkpoint import DEFAULT_CHECKPOINT, SHIPPED, checkpoint_path, resolve_model
    assert checkpoint_path(None) == checkpoint_path("small") == DEFAULT_CHECKPOINT
    assert checkpoint_path("fast") == SHIPPED["fast"] and checkpoint_path("x/fast") != SHIPPED["fast"]
    small, fast = resolve_model("small"), resolve_model("fast")
    assert fast[0].cfg.d_model == small[0].cfg.d_model and fast[0].cfg.ffn_mult < small[0].cfg.ffn_mult
    assert fast[1]["name"] == "feat-fast" and fast[1]["teacher_sha256"] == read_checkpoint(DEFAULT_CHECKPOINT)["sha256"]
    assert all(v.dtype != torch.float32 for v in read_checkpoint(SHIPPED["fast"])["state_dict"].values())
