"""Diffusion Policy as trained here: TrainableDiffusion computes stock LeRobot's loss on our batches (one
observation, no time axis) with the same gradients; its optimizer groups and betas; the config's validation names
the field; the GPU recipe parses into the runs it describes."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import torch
from so101_policy.config import EvalConfig, TrainConfig, parse_train_config
from so101_policy.diffusion_training import TrainableDiffusion
from so101_policy.errors import ConfigError
from so101_policy.policy_types import lerobot_config
from so101_policy.sweep import load_sweep

CAMERAS = ("ego", "side")
H, W, B, CHUNK = 24, 32, 4, 8
TINY = TrainConfig(
    policy="diffusion", chunk_size=CHUNK, diffusion_down_dims=(16, 32), diffusion_keypoints=4,
    diffusion_train_timesteps=20, diffusion_inference_steps=4, device="cpu",
)  # fmt: skip
RECIPE = Path(__file__).resolve().parents[3] / "bench" / "gpu" / "policy_recipe_diffusion.yaml"


def _features() -> dict[str, dict]:
    features: dict[str, dict] = {
        k: {"dtype": "float32", "shape": (6,), "names": None} for k in ("observation.state", "action")
    }
    for cam in CAMERAS:
        features[f"observation.images.{cam}"] = {"dtype": "video", "shape": (H, W, 3),
                                                 "names": ["height", "width", "channels"]}  # fmt: skip
    return features


def _policy(cfg: TrainConfig = TINY) -> object:
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

    torch.manual_seed(0)
    return DiffusionPolicy(lerobot_config(cfg, _features(), [f"observation.images.{c}" for c in CAMERAS], "cpu"))


def _batch(seed: int = 1) -> dict[str, torch.Tensor]:
    """What our batch streams give (after normalisation): one observation per sample, no time axis."""
    g = torch.Generator().manual_seed(seed)
    batch = {
        "observation.state": torch.randn(B, 6, generator=g),
        "action": torch.rand(B, CHUNK, 6, generator=g) * 2 - 1,
        "action_is_pad": torch.zeros(B, CHUNK, dtype=torch.bool),
    }
    batch["action_is_pad"][0, -3:] = True  # a chunk padded at the episode's end
    batch["action_is_pad"][2, -1:] = True
    for cam in CAMERAS:
        batch[f"observation.images.{cam}"] = torch.randn(B, 3, H, W, generator=g)
    return batch


def _as_lerobot_dataset_gives(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same samples as LeRobot's dataset gives them to Diffusion Policy with n_obs_steps 1: every observation
    key with a time axis of length 1 (its observation_delta_indices are [0])."""
    return {k: v.unsqueeze(1) if k.startswith("observation.") else v for k, v in batch.items()}


def test_the_loss_and_its_gradients_are_stock_forwards_on_the_same_samples() -> None:
    stock = _policy().train()  # type: ignore[attr-defined]
    ours = TrainableDiffusion(copy.deepcopy(stock))
    assert stock.config.do_mask_loss_for_padding and stock.config.n_obs_steps == 1 and stock.config.crop_shape is None
    batch = _batch()
    torch.manual_seed(5)  # the noise and the timesteps
    want, _ = stock.forward(_as_lerobot_dataset_gives(batch))
    torch.manual_seed(5)
    got, parts = ours.loss(dict(batch))
    assert parts == {} and got.requires_grad
    assert got.item() == pytest.approx(want.item(), rel=1e-6)
    want.backward()
    got.backward()
    for (name, p), q in zip(stock.named_parameters(), ours.policy.parameters(), strict=True):
        assert p.grad is not None and torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-7), name
    torch.manual_seed(6)  # another draw: another loss (the seed, not a constant, made them equal)
    assert ours.loss(dict(batch))[0].item() != pytest.approx(got.item(), rel=1e-3)


def test_shifted_images_change_the_loss_only_when_asked() -> None:
    plain = TrainableDiffusion(_policy())
    shifted = TrainableDiffusion(copy.deepcopy(plain.policy), image_shift_px=3)
    batch = _batch()
    losses = []
    for model in (plain, shifted):
        torch.manual_seed(7)
        losses.append(model.loss(dict(batch))[0].item())
    assert losses[0] != pytest.approx(losses[1], rel=1e-4)


def test_optimizer_groups_put_the_resnets_at_the_backbone_rate_and_keep_lerobots_betas() -> None:
    model = TrainableDiffusion(_policy())
    rest, backbone = model.optim_groups(1e-4, 3e-5)
    assert (rest["lr"], backbone["lr"]) == (1e-4, 3e-5)
    resnets = {id(p) for enc in model.policy.diffusion.rgb_encoder for p in enc.backbone.parameters()}
    assert {id(p) for p in backbone["params"]} == resnets and len(model.policy.diffusion.rgb_encoder) == len(CAMERAS)
    assert len(rest["params"]) + len(backbone["params"]) == len(list(model.policy.parameters()))
    assert model.betas == (0.95, 0.999)
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.policy.modules())  # GroupNorm, from scratch


def test_config_errors_name_the_field() -> None:
    for changes, match in (
        ({"policy": "vqbet"}, r"train\.policy: must be one of \['act', 'diffusion'\]"),
        ({"chunk_size": 10}, r"train\.chunk_size: \(10\) must be a multiple of 2 \*\* len\(diffusion_down_dims\) = 4"),
        ({"diffusion_down_dims": (16, 32, 64, 128)}, r"train\.chunk_size: \(8\) must be a multiple of .* = 16"),
        ({"diffusion_down_dims": (16, 20)}, r"train\.diffusion_down_dims: .*multiple of 8"),
        ({"diffusion_down_dims": ()}, r"train\.diffusion_down_dims"),
        (
            {"diffusion_noise_scheduler": "Euler"},
            r"train\.diffusion_noise_scheduler: must be one of \['DDIM', 'DDPM'\]",
        ),
        ({"diffusion_inference_steps": 21}, r"train\.diffusion_inference_steps: must be in \[1, .* = 20\]"),
        ({"diffusion_keypoints": 0}, r"train\.diffusion_keypoints: must be > 0"),
        ({"dim_model": 256}, r"train\.dim_model: shapes ACT only, but policy is 'diffusion'"),
        ({"backbone_norm": "batch"}, r"train\.backbone_norm: shapes ACT only"),
    ):
        with pytest.raises(ConfigError, match=match):
            dataclasses.replace(TINY, **changes)
    with pytest.raises(
        ConfigError, match=r"train\.diffusion_keypoints: shapes Diffusion Policy only, but policy is 'act'"
    ):
        TrainConfig(diffusion_keypoints=16)
    assert dataclasses.replace(TINY, chunk_size=12).chunk_size == 12  # a multiple of 4 with two levels
    assert TrainConfig(chunk_size=10).policy == "act"  # ACT has no such rule
    parsed = parse_train_config({"policy": "diffusion", "chunk_size": 16, "diffusion_down_dims": [32, 64]})
    assert parsed.diffusion_down_dims == (32, 64) and parsed.diffusion_noise_scheduler == "DDIM"
    with pytest.raises(ConfigError, match=r"train\.diffusion_down_dims: expected a list of integers"):
        parse_train_config({"policy": "diffusion", "diffusion_down_dims": 64})


def test_the_gpu_recipe_trains_diffusion_as_acts_shift4_run_was_trained() -> None:
    sweep = load_sweep(RECIPE, TrainConfig(), EvalConfig())
    assert set(sweep.runs) == {"diffusion"}
    dp = sweep.runs["diffusion"]
    shift = load_sweep(RECIPE.parent / "policy_recipe_shift.yaml", TrainConfig(), EvalConfig()).runs["shift4"]
    assert dp.policy == "diffusion" and shift.policy == "act"
    # the same data, augmentation, batch, schedule and steps as the ACT run it is compared with
    for name in ("image_shift_px", "batch_size", "use_amp", "lr_schedule", "steps", "device", "frame_cache_gb"):
        assert getattr(dp, name) == getattr(shift, name), name
    assert dp.image_shift_px == 4 and dp.steps == 4000 and dp.device == "cuda"
    assert dp.diffusion_noise_scheduler == "DDIM" and dp.diffusion_inference_steps == 10
    assert sweep.eval.episodes >= 50 and sweep.eval.dr_profile == "wide"
