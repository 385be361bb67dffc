"""Diffusion Policy as trained here: LeRobot's ``DiffusionPolicy``, its own loss on our batches.

Our batch streams (:func:`.train.batch_stream`) give one observation per sample: ``observation.state`` (B, 6) and
each camera (B, 3, H, W) float32 in [0, 1], the action chunk (B, horizon, 6) with ``action_is_pad`` (B, horizon).
LeRobot's dataset, with Diffusion Policy's ``n_obs_steps`` = 1, gives the state as (B, 1, 6) and stock
``DiffusionPolicy.forward`` reads ``state.shape[1]`` as the number of observation steps (it adds the time axis to
images itself, not to the state): :meth:`TrainableDiffusion.loss` adds it, shifts the images
(``image_shift_px``, :mod:`.augment`) and calls the stock forward, which has no host sync (the noise scheduler's
tables move to the device once). The loss is LeRobot's: the noise-prediction MSE at a random timestep per sample,
masked where the chunk runs past its episode's end (``do_mask_loss_for_padding``). A checkpoint is the policy
itself (``save_pretrained``): it loads in stock LeRobot (``DiffusionPolicy.from_pretrained``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from so101_core.lerobot_schema import OBS_STATE
from torch import Tensor

from .augment import random_shift
from .param_groups import backbone_groups


def with_observation_step(batch: dict[str, Any]) -> dict[str, Any]:
    """``batch`` (a copy) with the state given the time axis of one observation step, (B, 6) → (B, 1, 6), as stock
    Diffusion Policy reads it (training and inference alike; it adds the images' axis itself)."""
    state = batch[OBS_STATE]
    return {**batch, OBS_STATE: state.unsqueeze(1) if state.ndim == 2 else state}


class TrainableDiffusion:
    """``policy`` (a LeRobot ``DiffusionPolicy`` with ``n_obs_steps`` 1, on its device) for our training loop;
    ``image_shift_px``: each training image shifted by up to that many px (:func:`.augment.random_shift`)."""

    betas: tuple[float, float]

    def __init__(self, policy: Any, image_shift_px: int = 0) -> None:
        if policy.config.n_obs_steps != 1:
            raise ValueError(f"one observation per sample is trained here, the policy has {policy.config.n_obs_steps}")
        self.policy = policy
        self.config = policy.config
        self.image_shift_px = image_shift_px
        b1, b2 = policy.config.optimizer_betas
        self.betas = (float(b1), float(b2))  # LeRobot's Diffusion Policy preset: (0.95, 0.999)

    def optim_groups(self, lr: float, lr_backbone: float) -> list[dict[str, Any]]:
        """The cameras' ResNets (``diffusion.rgb_encoder.*.backbone``) at ``lr_backbone``, the rest (UNet,
        spatial softmax, projections) at ``lr``; LeRobot trains all at one lr (``lr_backbone == lr``)."""
        return backbone_groups(
            self.policy, lambda name: name.startswith("diffusion.rgb_encoder") and ".backbone." in name, lr, lr_backbone
        )

    def parameters(self) -> Iterator[Any]:
        return iter(self.policy.parameters())

    def save_training_extras(self, training_state: Path) -> None:
        """Nothing: the policy and the optimizer are the whole training state."""

    def load_training_extras(self, training_state: Path) -> None:
        """Nothing to load (:meth:`save_training_extras`)."""

    def loss(self, batch: dict[str, Any]) -> tuple[Tensor, dict[str, Tensor]]:
        """LeRobot's Diffusion Policy loss on a preprocessed ``batch`` (shapes in the module docstring)."""
        batch = with_observation_step(batch)
        for key in self.config.image_features:
            batch[key] = random_shift(batch[key], self.image_shift_px)
        loss, _ = self.policy.forward(batch)
        return loss, {}

    @contextmanager
    def exported(self) -> Iterator[Any]:
        """The policy as saved: trained as it is stored (no layer is swapped for training)."""
        yield self.policy
