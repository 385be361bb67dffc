"""TrainableAct computes ACT's loss as stock LeRobot does, and writes checkpoints that stock LeRobot loads."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from so101_policy.act_training import TrainableAct
from so101_policy.errors import ConfigError

CAMERAS = ("ego", "side")
H, W, B, CHUNK = 24, 32, 4, 6


def _policy() -> object:
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy

    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (6,))}
    for cam in CAMERAS:
        inputs[f"observation.images.{cam}"] = PolicyFeature(FeatureType.VISUAL, (3, H, W))
    cfg = ACTConfig(
        input_features=inputs,
        output_features={"action": PolicyFeature(FeatureType.ACTION, (6,))},
        device="cpu",
        chunk_size=CHUNK,
        n_action_steps=CHUNK,
        pretrained_backbone_weights=None,
        dim_model=32,
        dim_feedforward=64,
        n_heads=2,
        n_encoder_layers=1,
        latent_dim=8,
        dropout=0.1,
    )
    torch.manual_seed(0)
    return ACTPolicy(cfg).train()


def _batch(seed: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    batch = {
        "observation.state": torch.randn(B, 6, generator=g),
        "action": torch.randn(B, CHUNK, 6, generator=g),
        "action_is_pad": torch.zeros(B, CHUNK, dtype=torch.bool),
    }
    batch["action_is_pad"][0, -2:] = True  # a chunk padded at the episode's end
    for cam in CAMERAS:
        batch[f"observation.images.{cam}"] = torch.rand(B, 3, H, W, generator=g)
    return batch


def test_frozen_loss_equals_stock_forward_and_runs_one_backbone_pass() -> None:
    stock = _policy()
    fast = TrainableAct(copy.deepcopy(stock), "frozen", fresh=True)
    passes: list[int] = []  # batch sizes seen by the first convolution
    fast.policy.model.backbone.conv1.register_forward_hook(lambda m, args, out: passes.append(args[0].shape[0]))
    batch = _batch()
    torch.manual_seed(5)
    want, want_parts = stock.forward(dict(batch))  # type: ignore[attr-defined]
    torch.manual_seed(5)
    got, parts = fast.loss(dict(batch))
    assert passes == [B * len(CAMERAS)]  # two cameras, one pass
    # stock's frozen norms scale by 1/sqrt(1 + 1e-5) per layer; ours by exactly 1
    assert got.item() == pytest.approx(want.item(), rel=1e-3)
    assert parts["l1_loss"].item() == pytest.approx(want_parts["l1_loss"], rel=1e-3)
    assert parts["kld_loss"].item() == pytest.approx(want_parts["kld_loss"], rel=1e-3)
    got.backward()
    assert all(p.grad is not None for p in fast.policy.model.backbone.parameters() if p.requires_grad)


@pytest.mark.parametrize("norm", ["frozen", "batch"])
def test_exported_checkpoint_loads_in_stock_lerobot_and_predicts_the_same(norm: str, tmp_path: Path) -> None:
    from lerobot.policies.act.modeling_act import ACTPolicy

    fast = TrainableAct(_policy(), norm, fresh=True)
    opt = torch.optim.AdamW([p for g in fast.optim_groups(1e-3, 1e-3) for p in g["params"]], lr=1e-3)
    for step in range(3):  # moves the weights, and BatchNorm's running statistics
        loss, _ = fast.loss(_batch(step))
        loss.backward()
        opt.step()
        opt.zero_grad()
    with fast.exported() as policy:
        policy.save_pretrained(tmp_path)
    restored = any(isinstance(m, torch.nn.BatchNorm2d) for m in fast.policy.modules())
    assert restored == (norm == "batch")  # the training layers are back after the save
    loaded = ACTPolicy.from_pretrained(str(tmp_path)).eval()
    fast.policy.eval()
    batch = _batch(9)
    with torch.no_grad():
        want = fast.policy.predict_action_chunk(dict(batch))
        got = loaded.predict_action_chunk(dict(batch))
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    if norm == "batch":  # the statistics moved away from the identity, and the checkpoint carries them
        assert not torch.allclose(loaded.model.backbone.bn1.running_mean, torch.zeros(64))


def test_frozen_mode_refuses_a_checkpoint_with_learned_statistics(tmp_path: Path) -> None:
    from lerobot.policies.act.modeling_act import ACTPolicy

    trained = TrainableAct(_policy(), "batch", fresh=True)
    loss, _ = trained.loss(_batch())
    loss.backward()
    with trained.exported() as policy:
        policy.save_pretrained(tmp_path)
    with pytest.raises(ConfigError, match="backbone_norm"):
        TrainableAct(ACTPolicy.from_pretrained(str(tmp_path)), "frozen", fresh=False)
    with pytest.raises(ConfigError, match="backbone_norm: must be one of"):
        TrainableAct(_policy(), "group", fresh=True)


def test_channels_last_training_state_saves_and_resumes(tmp_path: Path) -> None:
    from lerobot.common.train_utils import load_training_state, save_training_state
    from so101_policy.act_training import contiguous_state, match_layout

    def optimizer(model: TrainableAct) -> torch.optim.AdamW:
        return torch.optim.AdamW([p for g in model.optim_groups(1e-3, 1e-3) for p in g["params"]], lr=1e-3)

    fast = TrainableAct(_policy(), "frozen", fresh=True, channels_last=True)  # as on CUDA
    opt = optimizer(fast)
    loss, _ = fast.loss(_batch())
    loss.backward()
    opt.step()
    with pytest.raises(Exception, match="non contiguous"):  # what a plain save of channels-last moments does
        save_training_state(tmp_path / "plain", 1, opt, None)
    save_training_state(tmp_path / "ok", 1, opt, None, optim_state_dict=contiguous_state(opt))
    resumed = TrainableAct(_policy(), "frozen", fresh=True, channels_last=True)
    opt2 = optimizer(resumed)
    step, opt2, _ = load_training_state(tmp_path / "ok", opt2, None)
    match_layout(opt2)
    conv = resumed.policy.model.backbone.conv1.weight
    assert step == 1 and opt2.state[conv]["exp_avg"].stride() == conv.stride() != torch.empty(conv.shape).stride()
    loss, _ = resumed.loss(_batch())
    loss.backward()
    opt2.step()  # steps on with the restored moments
