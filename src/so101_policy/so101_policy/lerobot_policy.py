"""A LeRobot checkpoint behind the policy-server interface: N1.6 observation in dataset units → action chunk.

:func:`load_policy` reads the checkpoint's policy type (``config.json``, :func:`.policy_types.checkpoint_type`)
and loads it as :class:`ActPolicy` or :class:`DiffusionBackend` (both :class:`LeRobotPolicy`). The checkpoint's
config names its cameras (``observation.images.<cam>``) and image size; incoming frames of another size are resized
(bilinear) to it. ``get_action`` returns the whole predicted chunk (``horizon`` steps: ACT's ``chunk_size``,
Diffusion Policy's ``n_action_steps``); the policy node executes the first ones of them.

Frames travel to the device as uint8 and are converted and resized there. ACT: ``precision`` "bf16"/"fp16" runs
the model under CUDA autocast (normalisation and the returned actions stay float32); ``compile_mode`` (e.g.
"reduce-overhead": CUDA graphs against kernel-launch overhead) wraps the model in ``torch.compile``. Diffusion
Policy is served in fp32 without compilation (other options are refused): each chunk is sampled from fresh noise
in ``num_inference_steps`` denoising steps, each one UNet pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from so101_core.lerobot_schema import OBS_STATE, camera_of, image_key

from .act_training import CameraBatchedBackbone, fold_frozen_norms
from .checkpoints import pretrained_dir
from .diffusion_training import with_observation_step
from .errors import CheckpointError
from .policy_types import checkpoint_type, lerobot_class
from .protocol import check_observation
from .train import resolve_device

PRECISIONS = ("fp32", "bf16", "fp16")


class LeRobotPolicy:
    """Load ``checkpoint`` (run dir, checkpoint dir or pretrained_model dir) of this class's policy type onto
    ``device``; a subclass prepares the model for inference (:meth:`_prepare`) and the batch (:meth:`_inputs`)."""

    kind: ClassVar[str]  # the LeRobot policy type served
    precisions: ClassVar[tuple[str, ...]] = PRECISIONS
    compiles: ClassVar[bool] = True

    def __init__(
        self, checkpoint: str | Path, device: str = "auto", precision: str = "fp32", compile_mode: str = ""
    ) -> None:
        import torch
        from lerobot.policies import make_pre_post_processors

        path = pretrained_dir(Path(checkpoint))
        self.device = resolve_device(device)
        if precision not in PRECISIONS:
            raise CheckpointError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if precision not in self.precisions:
            raise CheckpointError(f"precision {precision}: {self.kind} is served in {list(self.precisions)} only")
        if compile_mode and not self.compiles:
            raise CheckpointError(f"compile mode {compile_mode!r}: {self.kind} is served without torch.compile")
        if precision != "fp32" and not self.device.startswith("cuda"):
            raise CheckpointError(f"precision {precision} needs CUDA (device is {self.device})")
        kind = checkpoint_type(path)
        if kind != self.kind:
            raise CheckpointError(f"{path} holds a {kind} policy, not {self.kind}: load it with load_policy")
        self.precision = precision
        if self.device.startswith("cuda"):
            torch.backends.cudnn.benchmark = True  # fixed input shapes: pick the fastest convolutions once
        try:
            policy = lerobot_class(kind).from_pretrained(str(path))
        except Exception as exc:
            raise CheckpointError(f"cannot load {kind} from {path}: {type(exc).__name__}: {exc}") from exc
        policy.config.device = self.device
        self.torch = torch
        self.policy = policy.to(self.device).eval()
        self._prepare(compile_mode)
        self.pre, self.post = make_pre_post_processors(
            policy.config,
            pretrained_path=str(path),
            preprocessor_overrides={"device_processor": {"device": self.device}},
        )
        images = list(policy.config.image_features)
        self.cameras = tuple(camera_of(k) for k in images)
        self.image_shapes = {k: tuple(policy.config.image_features[k].shape) for k in images}  # (3, H, W)
        self.horizon = self._chunk_length()
        self.checkpoint = path

    def _prepare(self, compile_mode: str) -> None:
        """Make ``self.policy`` ready for inference (after loading, on the device)."""

    def _inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The preprocessed ``batch`` as the policy's ``predict_action_chunk`` takes it."""
        return batch

    def _chunk_length(self) -> int:
        raise NotImplementedError

    def image_size(self) -> tuple[int, int]:
        """(width, height) px of the images the policy was trained on (first camera)."""
        _, h, w = next(iter(self.image_shapes.values()))
        return w, h

    def _batch(self, obs: dict[str, Any], task: str) -> dict[str, Any]:
        """The newest observation of each row: state (B, 6) float32, each camera (B, 3, H, W) float32 in [0, 1] on
        the device at the training size."""
        torch = self.torch
        state = np.concatenate([obs["state"]["single_arm"][:, -1], obs["state"]["gripper"][:, -1]], axis=1)
        batch: dict[str, Any] = {OBS_STATE: torch.as_tensor(state, dtype=torch.float32), "task": task}
        for cam in self.cameras:
            key = image_key(cam)
            frames = torch.as_tensor(np.ascontiguousarray(obs["video"][cam][:, -1]))  # (B, H, W, 3) uint8
            frames = frames.to(self.device, non_blocking=False)
            img = frames.permute(0, 3, 1, 2).to(torch.float32) / 255.0
            _, h, w = self.image_shapes[key]
            if img.shape[-2:] != (h, w):
                img = torch.nn.functional.interpolate(img, size=(h, w), mode="bilinear", align_corners=False)
            batch[key] = img
        return batch

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        """Chunk ``{"single_arm": (B, H, 5), "gripper": (B, H, 1)}`` float32 in dataset units."""
        _, task = check_observation(observation, self.cameras)
        with self.torch.inference_mode():
            batch = self._inputs(self.pre(self._batch(observation, task)))
            half = {"bf16": self.torch.bfloat16, "fp16": self.torch.float16}.get(self.precision)
            with self.torch.autocast("cuda", dtype=half or self.torch.float32, enabled=half is not None):
                chunk = self.policy.predict_action_chunk(batch)  # (B, H, 6) normalised
            chunk = chunk.float()
            actions = self.post(chunk).to("cpu", self.torch.float32).numpy()
        return {"single_arm": actions[:, :, :5], "gripper": actions[:, :, 5:]}, {}

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        self.policy.reset()
        return {}


class ActPolicy(LeRobotPolicy):
    """An ACT checkpoint: the backbone's norms folded into its convolutions, every camera in one pass."""

    kind = "act"

    def _prepare(self, compile_mode: str) -> None:
        policy = self.policy
        self.backbone = self._fast_backbone(policy) if policy.config.image_features else None
        if compile_mode:
            policy.model = self.torch.compile(policy.model, mode=compile_mode)

    def _chunk_length(self) -> int:
        return int(self.policy.config.chunk_size)

    def _fast_backbone(self, policy: Any) -> CameraBatchedBackbone:
        """The backbone for inference: norm layers folded into the convolutions, every camera in one pass,
        channels-last on CUDA (the same numbers as the checkpoint's model, to float rounding)."""
        fold_frozen_norms(policy.model.backbone)
        backbone = CameraBatchedBackbone.adopt(policy.model.backbone)
        if self.device.startswith("cuda"):
            backbone.to(memory_format=self.torch.channels_last)
        return backbone

    def _inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        if self.backbone is not None:
            self.backbone.prime([batch[k] for k in self.policy.config.image_features])
        return batch


class DiffusionBackend(LeRobotPolicy):
    """A Diffusion Policy checkpoint (one observation step), fp32. Its observation queues stay empty (only
    ``predict_action_chunk`` is called), so LeRobot takes the batch as given: the state gets its time axis here
    ((B, 1, 6)), the images (B, 3, H, W) get theirs in LeRobot."""

    kind = "diffusion"
    precisions = ("fp32",)
    compiles = False

    def _chunk_length(self) -> int:
        return int(self.policy.config.n_action_steps)

    def _inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        return with_observation_step(batch)


BACKENDS: dict[str, type[LeRobotPolicy]] = {cls.kind: cls for cls in (ActPolicy, DiffusionBackend)}


def load_policy(
    checkpoint: str | Path, device: str = "auto", precision: str = "fp32", compile_mode: str = ""
) -> LeRobotPolicy:
    """The checkpoint (run dir, checkpoint dir or pretrained_model dir) as the backend of its policy type."""
    kind = checkpoint_type(pretrained_dir(Path(checkpoint)))
    return BACKENDS[kind](checkpoint, device=device, precision=precision, compile_mode=compile_mode)
