"""The auxiliary pose loss (train.aux_pose_weight, so101_policy.aux_pose): labels from the units' vial poses,
carried row by row into batches, off = today's training exactly, on = a head that learns, is resumed and is never
exported."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from so101_core.episode_units import write_frames
from so101_policy.act_training import TrainableAct
from so101_policy.aux_pose import HEAD_FILE
from so101_policy.config import TrainConfig
from so101_policy.errors import CheckpointError, ConfigError
from so101_policy.frame_cache import AUX_POSE
from so101_policy.train import train_policy
from so101_policy.training_data import (
    POSE_STD_FLOOR_M,
    TrainingData,
    aux_pose_labels,
    decode_units,
    open_training_data,
)
from test_act_training import B, _batch, _policy

CAMERAS = ("top",)
TINY = {"batch_size": 8, "num_workers": 0, "lr": 1e-3, "lr_backbone": 1e-3, "chunk_size": 4, "dim_model": 32,
        "dim_feedforward": 64, "n_heads": 2, "n_encoder_layers": 1, "latent_dim": 8, "log_freq": 5, "device": "cpu",
        "system_metrics": False, "log_checkpoints": False, "cameras": CAMERAS}  # fmt: skip


def _write_unit(root: Path, k: int, frames: int, rng: np.random.Generator, vial: bool = True) -> np.ndarray | None:
    """A rendered unit whose vial follows the first three joints (xyz = 0.1 q + offset) and whose pixels' brightness
    tells its goal (the vial's last xy); returns the vial pose (F, 7)."""
    unit = root / "episodes" / f"episode_{k:06d}"
    unit.mkdir(parents=True)
    meta = {"height": 12, "width": 16, "cameras": list(CAMERAS), "fps": 30}
    (unit / "episode.json").write_text(json.dumps(meta), encoding="utf-8")
    q = rng.uniform(-1, 1, (frames, 6))
    level = 30 + 60 * (k % 4)
    pose = np.zeros((frames, 7))
    pose[:, :3] = 0.1 * q[:, :3] + [0.2, -0.1, 0.06]
    pose[-1, :2] = [0.2 + level / 1000, -0.1 - level / 2000]  # the goal, seen as the image's brightness
    pose[:, 3] = 1.0  # quaternion wxyz: upright
    arrays = {"q": q, "action": rng.uniform(-1, 1, (frames, 6))}
    if vial:
        arrays["object_pose/vial"] = pose
    np.savez(unit / "replay.npz", **arrays)
    pixels = np.clip(level + rng.integers(-8, 9, (frames, 12, 16, 3)), 0, 255).astype(np.uint8)
    write_frames(unit / "frames.npz", {"top": pixels})
    return pose if vial else None


@pytest.fixture(scope="module")
def units(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("units")
    rng = np.random.default_rng(0)
    for k in range(4):
        _write_unit(root, k, 24, rng)
    return root


def test_config_validates_and_refuses_aux_pose_for_diffusion() -> None:
    assert TrainConfig().aux_pose_weight == 0.0
    with pytest.raises(ConfigError, match=r"train.aux_pose_weight: must be >= 0"):
        TrainConfig(aux_pose_weight=-0.5)
    with pytest.raises(ConfigError, match=r"train.aux_pose_weight: shapes ACT only"):
        TrainConfig(policy="diffusion", aux_pose_weight=1.0)


def test_a_lerobot_dataset_is_refused_before_training(tmp_path: Path) -> None:
    from so101_policy.testing.dataset import make_dataset

    with pytest.raises(ConfigError, match=r"aux_pose_weight: needs rendered episode units.*'lerobot'"):
        aux_pose_labels(TrainingData("lerobot", tmp_path, {}, {}, 30.0, 0, 0))
    dataset = make_dataset(tmp_path / "ds", episodes=1, frames=4)
    with pytest.raises(ConfigError, match=r"aux_pose_weight: needs rendered episode units"):
        train_policy(dataset, tmp_path / "run", TrainConfig(steps=2, aux_pose_weight=1.0, **TINY))
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_labels_are_the_replays_goal_and_vial_positions_normalised(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    poses = [_write_unit(tmp_path, k, n, rng) for k, n in enumerate((7, 11, 5))]
    labels, mean, std = aux_pose_labels(open_training_data(tmp_path))
    want = np.concatenate([np.c_[np.tile(p[-1, :2], (len(p), 1)), p[:, :3]] for p in poses if p is not None])
    assert labels.shape == (23, 5) and labels.dtype == np.float32
    np.testing.assert_allclose(labels * std + mean, want, atol=1e-6)
    np.testing.assert_allclose(mean, want.mean(0), atol=1e-6)
    np.testing.assert_allclose(std, np.maximum(want.std(0), POSE_STD_FLOOR_M), atol=1e-6)
    assert std[4] > POSE_STD_FLOOR_M  # the vial's height varies here
    _write_unit(tmp_path, 3, 4, rng, vial=False)
    with pytest.raises(ConfigError, match=r"episode_000003/replay.npz has no object_pose/vial"):
        aux_pose_labels(open_training_data(tmp_path))


def test_a_constant_label_is_normalised_by_the_floor(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    for k in range(2):
        _write_unit(tmp_path, k, 6, rng)
    data = open_training_data(tmp_path)
    assert data.poses is not None
    data.poses[:, 4] = 0.061  # every row's vial at one height
    labels, _, std = aux_pose_labels(data)
    assert std[4] == pytest.approx(POSE_STD_FLOOR_M) and np.all(labels[:, 4] == 0)


def test_each_batch_items_labels_are_its_rows(units: Path) -> None:
    data = open_training_data(units)
    labels = aux_pose_labels(data)[0]
    cache = decode_units(data, ["observation.images.top"], chunk=4, device="cpu", extras={AUX_POSE: labels})
    stream = cache.batches(5, seed=3)
    for _ in range(6):
        batch = next(stream)
        for state, label in zip(batch["observation.state"], batch[AUX_POSE], strict=True):
            (row,) = np.flatnonzero((cache.state == state).all(1).numpy())  # the states are distinct
            np.testing.assert_array_equal(label.numpy(), labels[row])


def test_max_episodes_labels_are_the_selected_units_rows(units: Path, tmp_path: Path) -> None:
    """max_episodes 2 of 4: one label per selected row, normalised over those rows alone (as a build of just
    them), and batched with them."""
    for unit in sorted((units / "episodes").iterdir())[:2]:
        shutil.copytree(unit, tmp_path / "episodes" / unit.name)
    data = open_training_data(units, max_episodes=2)
    labels, mean, std = aux_pose_labels(data)
    want = aux_pose_labels(open_training_data(tmp_path))
    assert labels.shape == (48, 5) and data.frames == 48
    for got, ref in zip((labels, mean, std), want, strict=True):
        np.testing.assert_array_equal(got, ref)
    cache = decode_units(data, ["observation.images.top"], chunk=4, device="cpu", extras={AUX_POSE: labels})
    assert len(cache) == 48


def _aux_batch(seed: int = 1) -> dict[str, torch.Tensor]:
    batch = _batch(seed)
    batch[AUX_POSE] = torch.randn(B, 5, generator=torch.Generator().manual_seed(seed + 100))
    return batch


def _loss_and_grads(model: TrainableAct, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict, list]:
    torch.manual_seed(5)
    loss, parts = model.loss(dict(batch))
    loss.backward()
    return loss.detach(), parts, [p.grad for p in model.policy.parameters()]


def test_weight_zero_is_todays_loss_and_gradients_exactly() -> None:
    stock = _policy()
    today = TrainableAct(copy.deepcopy(stock), "batch", fresh=True)
    off = TrainableAct(copy.deepcopy(stock), "batch", fresh=True, aux_pose_weight=0.0)
    want, want_parts, want_grads = _loss_and_grads(today, _batch())
    got, parts, grads = _loss_and_grads(off, _aux_batch())  # labels in the batch change nothing
    assert torch.equal(got, want) and parts.keys() == want_parts.keys() == {"l1_loss", "kld_loss"}
    assert all(torch.equal(g, w) for g, w in zip(grads, want_grads, strict=True) if w is not None)
    assert off.aux is None and len(off.optim_groups(1e-3, 1e-4)) == 2
    assert [id(p) for p in off.parameters()] == [id(p) for p in off.policy.parameters()]  # clipped over


def test_weight_adds_the_aux_loss_to_acts_own_and_refuses_a_batch_without_labels() -> None:
    stock = _policy()
    off = TrainableAct(copy.deepcopy(stock), "batch", fresh=True)
    on = TrainableAct(copy.deepcopy(stock), "batch", fresh=True, aux_pose_weight=0.5)
    want, want_parts, _ = _loss_and_grads(off, _aux_batch())
    got, parts, grads = _loss_and_grads(on, _aux_batch())
    assert all(torch.equal(parts[k], want_parts[k]) for k in ("l1_loss", "kld_loss"))  # ACT's own terms unchanged
    assert got.item() == pytest.approx(want.item() + 0.5 * parts["aux_pose_loss"].item(), rel=1e-6)
    assert on.aux is not None and all(p.grad is not None for p in on.aux.head.parameters())
    assert grads[-1] is not None  # ACT's parameters learn from it too (through the encoder)
    groups = on.optim_groups(1e-3, 1e-4)
    assert len(groups) == 3 and groups[2]["lr"] == 1e-3 and groups[2]["params"] == list(on.aux.head.parameters())
    with pytest.raises(ConfigError, match=r"aux_pose_weight: is > 0 but the batch has no 'aux.pose' labels"):
        on.loss(_batch())


def test_the_head_reads_the_encoder_output_with_its_positions_added() -> None:
    """ACT adds positions to the encoder's queries and keys only: the head gets them added back, per token."""
    from so101_policy.aux_pose import AuxPose

    encoder = torch.nn.Linear(4, 4)  # stands for model.encoder: called as encoder(tokens, pos_embed=...)

    class Encoder(torch.nn.Module):
        def forward(self, x: torch.Tensor, pos_embed: torch.Tensor | None = None) -> torch.Tensor:
            return encoder(x)

    enc = Encoder()
    aux = AuxPose(enc, 4, "cpu")
    x, pos = torch.randn(5, 2, 4), torch.randn(5, 1, 4)
    with aux.capturing():
        out = enc(x, pos_embed=pos)
    assert aux._tokens is not None and torch.equal(aux._tokens, out + pos)
    enc(x, pos_embed=pos)  # outside capturing(): nothing kept
    assert torch.equal(aux._tokens, out + pos)


def test_the_head_is_saved_beside_the_optimizer_and_loads_back(tmp_path: Path) -> None:
    first = TrainableAct(_policy(), "batch", fresh=True, aux_pose_weight=1.0)
    assert first.aux is not None
    with torch.no_grad():
        first.aux.head.query.normal_()  # away from a fresh head's zeros
    first.save_training_extras(tmp_path)
    torch.manual_seed(123)
    second = TrainableAct(_policy(), "batch", fresh=True, aux_pose_weight=1.0)
    assert second.aux is not None
    with pytest.raises(CheckpointError, match="auxiliary pose head"):
        second.load_training_extras(tmp_path / "elsewhere")
    second.load_training_extras(tmp_path)
    want = first.aux.head.state_dict()
    assert all(torch.equal(v, want[k]) for k, v in second.aux.head.state_dict().items())


def test_training_with_the_aux_loss_learns_exports_stock_act_and_resumes_the_head(
    units: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lerobot.policies.act.modeling_act import ACTPolicy
    from safetensors.torch import load_file
    from so101_policy.aux_pose import AuxPose

    run = tmp_path / "run"
    cfg = TrainConfig(steps=40, save_freq=40, aux_pose_weight=1.0, **TINY)
    first = train_policy(units, run, cfg)
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    aux = [x["loss/aux_pose_loss"] for x in lines if "loss/aux_pose_loss" in x]
    assert len(aux) == 8 and sum(aux[4:]) / 4 < 0.85 * aux[0], aux  # the head learns the toy signal (0.87 -> ~0.66)
    pretrained = first.checkpoint_dir / "pretrained_model"
    loaded = ACTPolicy.from_pretrained(str(pretrained))  # stock LeRobot loads it
    assert set(load_file(str(pretrained / "model.safetensors"))) == set(ACTPolicy(loaded.config).state_dict())
    head = load_file(str(first.checkpoint_dir / "training_state" / HEAD_FILE))
    assert set(head) == {"query", *(f"{m}.{p}" for m in ("norm", "mlp.0", "mlp.2") for p in ("weight", "bias"))}

    resumed_heads = []
    real_load = AuxPose.load

    def spy(self: AuxPose, training_state: Path) -> None:
        real_load(self, training_state)
        resumed_heads.append({k: v.clone() for k, v in self.head.state_dict().items()})

    monkeypatch.setattr(AuxPose, "load", spy)
    again = train_policy(units, run, TrainConfig(steps=44, save_freq=40, aux_pose_weight=1.0, **TINY))
    assert again.resumed_from == 40 and again.steps == 44
    (state,) = resumed_heads  # the resumed run continues the head where it was
    assert all(torch.equal(state[k], v) for k, v in head.items())
    moved = load_file(str(again.checkpoint_dir / "training_state" / HEAD_FILE))
    assert not torch.equal(moved["mlp.2.weight"], head["mlp.2.weight"])  # and trains it on


def test_a_run_without_the_aux_loss_is_not_resumed_with_it(units: Path, tmp_path: Path) -> None:
    train_policy(units, tmp_path / "run", TrainConfig(steps=2, save_freq=2, **TINY))
    with pytest.raises(ConfigError, match=r"cannot resume: the config changed \(aux_pose_weight\)"):
        train_policy(units, tmp_path / "run", TrainConfig(steps=4, save_freq=2, aux_pose_weight=1.0, **TINY))
