"""A tiny ACT checkpoint for tests that need a real one to load, serve or evaluate (not to succeed)."""

from __future__ import annotations

from pathlib import Path

from ..config import TrainConfig
from ..train import train_policy
from .dataset import make_dataset


def tiny_act_config() -> TrainConfig:
    """ACT small enough to train 2 steps on a CPU in seconds: the top camera, chunks of 8."""
    return TrainConfig(
        steps=2, save_freq=2, batch_size=2, num_workers=0, chunk_size=8, dim_model=32, dim_feedforward=64, n_heads=2,
        n_encoder_layers=1, latent_dim=8, device="cpu", cameras=("top",), system_metrics=False, log_checkpoints=False,
    )  # fmt: skip


def tiny_act_checkpoint(root: Path) -> Path:
    """:func:`tiny_act_config` trained under ``root`` on one 12-frame episode (its top camera at 64x48): the
    checkpoint directory."""
    dataset = make_dataset(root / "ds", episodes=1, frames=12)
    return train_policy(dataset, root / "run", tiny_act_config()).checkpoint_dir
