"""The policy types LeRobot trains here (``train.policy``, LeRobot's ``--policy.type``): what training builds for
each type is chosen in this module (the serving side's choice: :func:`.lerobot_policy.load_policy`).

- ``act``: LeRobot's ``ACTPolicy``, trained as :class:`.act_training.TrainableAct`;
- ``diffusion``: LeRobot's ``DiffusionPolicy``, trained as :class:`.diffusion_training.TrainableDiffusion`.

Both are built offline (``pretrained_backbone_weights=None``: nothing downloads), see one observation
(``n_obs_steps`` 1) and predict ``train.chunk_size`` actions; their checkpoints are LeRobot's own and say their type
in ``config.json`` (:func:`checkpoint_type`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from so101_core.lerobot_schema import ACTION, OBS_STATE

from .config import POLICIES, TrainConfig
from .errors import CheckpointError


class Trainable(Protocol):
    """A LeRobot policy prepared for our training loop (:func:`.train.train_policy`)."""

    policy: Any  # the LeRobot policy (its parameters are trained)
    betas: tuple[float, float]  # Adam's, the policy's LeRobot preset

    def loss(self, batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """(loss, {term: detached tensor}) on a preprocessed batch, without a host sync."""
        ...

    def optim_groups(self, lr: float, lr_backbone: float) -> list[dict[str, Any]]: ...

    def parameters(self) -> Iterator[Any]:
        """Every trained parameter (the policy's first, in its order): what the gradient is clipped over."""
        ...

    def save_training_extras(self, training_state: Path) -> None:
        """Training-only state beside the optimizer's (e.g. an auxiliary head) into ``training_state/``."""
        ...

    def load_training_extras(self, training_state: Path) -> None: ...

    def exported(self) -> AbstractContextManager[Any]:
        """The policy as it is saved (loads in stock LeRobot)."""
        ...


def lerobot_class(policy: str) -> Any:
    """LeRobot's policy class of type ``policy`` (``act`` or ``diffusion``)."""
    if policy == "act":
        from lerobot.policies.act.modeling_act import ACTPolicy

        return ACTPolicy
    if policy == "diffusion":
        from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

        return DiffusionPolicy
    raise CheckpointError(f"policy type {policy!r} is not one of {list(POLICIES)}")


def checkpoint_type(pretrained: Path) -> str:
    """The policy type a ``pretrained_model`` directory's ``config.json`` names (LeRobot's reading of it)."""
    import lerobot.policies  # noqa: F401 (registers every LeRobot policy config type, which the reading needs)
    from lerobot.configs.policies import PreTrainedConfig

    try:
        kind = str(PreTrainedConfig.from_pretrained(str(pretrained)).type)
    except Exception as exc:
        raise CheckpointError(f"cannot read the policy config in {pretrained}: {type(exc).__name__}: {exc}") from exc
    if kind not in POLICIES:
        raise CheckpointError(f"{pretrained} holds a {kind!r} policy; served here: {list(POLICIES)}")
    return kind


def lerobot_config(cfg: TrainConfig, features: dict[str, Any], images: list[str], device: str) -> Any:
    """LeRobot's config of ``cfg.policy`` for the dataset ``features`` (its ``observation.state``, ``action`` and
    the camera keys ``images``) on ``device``."""
    from lerobot.configs.types import FeatureType
    from lerobot.utils.feature_utils import dataset_to_policy_features

    policy_features = dataset_to_policy_features(
        {k: v for k, v in features.items() if k in (OBS_STATE, ACTION, *images)}
    )
    outputs = {k: f for k, f in policy_features.items() if f.type is FeatureType.ACTION}
    inputs = {k: f for k, f in policy_features.items() if k not in outputs}
    common = {
        "input_features": inputs,
        "output_features": outputs,
        "device": device,
        "use_amp": cfg.use_amp,
        "push_to_hub": False,
        "n_obs_steps": 1,
        "n_action_steps": cfg.chunk_size,
        "vision_backbone": cfg.vision_backbone,
        "pretrained_backbone_weights": None,
        "optimizer_lr": cfg.lr,
        "optimizer_weight_decay": cfg.weight_decay,
    }
    if cfg.policy == "diffusion":
        from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig

        return DiffusionConfig(
            **common,
            horizon=cfg.chunk_size,
            drop_n_last_frames=0,  # every frame is sampled; chunks past an episode's end are masked instead
            use_group_norm=True,  # LeRobot's rule for a ResNet without pretrained weights
            crop_shape=None,  # our random shift (image_shift_px) instead of LeRobot's random crop
            spatial_softmax_num_keypoints=cfg.diffusion_keypoints,
            down_dims=tuple(cfg.diffusion_down_dims),
            noise_scheduler_type=cfg.diffusion_noise_scheduler,
            num_train_timesteps=cfg.diffusion_train_timesteps,
            num_inference_steps=cfg.diffusion_inference_steps,
            do_mask_loss_for_padding=True,
        )
    from lerobot.policies.act.configuration_act import ACTConfig

    return ACTConfig(
        **common,
        chunk_size=cfg.chunk_size,
        dim_model=cfg.dim_model,
        n_heads=cfg.n_heads,
        dim_feedforward=cfg.dim_feedforward,
        n_encoder_layers=cfg.n_encoder_layers,
        n_decoder_layers=cfg.n_decoder_layers,
        latent_dim=cfg.latent_dim,
        kl_weight=cfg.kl_weight,
        dropout=cfg.dropout,
        optimizer_lr_backbone=cfg.lr_backbone,
    )


def trainable(policy: Any, cfg: TrainConfig, fresh: bool) -> Trainable:
    """``policy`` (LeRobot's, of type ``cfg.policy``, on its device) prepared for training; ``fresh``: just built
    (not loaded from a checkpoint)."""
    if cfg.policy == "diffusion":
        from .diffusion_training import TrainableDiffusion

        return TrainableDiffusion(policy, image_shift_px=cfg.image_shift_px)
    from .act_training import TrainableAct

    return TrainableAct(
        policy, cfg.backbone_norm, fresh=fresh, image_shift_px=cfg.image_shift_px, aux_pose_weight=cfg.aux_pose_weight
    )
