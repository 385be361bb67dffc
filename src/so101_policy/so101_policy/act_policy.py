"""An ACT checkpoint behind the policy-server interface: N1.6 observation in dataset units → action chunk.

The checkpoint's config names its cameras (``observation.images.<cam>``) and image size; incoming frames of
another size are resized (bilinear) to it. ``get_action`` returns the whole predicted chunk
(``chunk_size`` steps); the policy node executes the first ``horizon`` of them.

Frames travel to the device as uint8 and are converted and resized there. ``precision`` "bf16"/"fp16" runs the
model under CUDA autocast (normalisation and the returned actions stay float32); ``compile_mode`` (e.g.
"reduce-overhead": CUDA graphs against kernel-launch overhead) wraps the model in ``torch.compile``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from so101_core.lerobot_schema import OBS_STATE, camera_of, image_key

from .act_training import CameraBatchedBackbone, fold_frozen_norms
from .checkpoints import pretrained_dir
from .errors import CheckpointError
from .protocol import check_observation
from .train import resolve_device

PRECISIONS = ("fp32", "bf16", "fp16")


class ActPolicy:
    """Load ``checkpoint`` (run dir, checkpoint dir or pretrained_model dir) onto ``device``."""

    def __init__(
        self, checkpoint: str | Path, device: str = "auto", precision: str = "fp32", compile_mode: str = ""
    ) -> None:
        import torch
        from lerobot.policies import make_pre_post_processors
        from lerobot.policies.act.modeling_act import ACTPolicy

        path = pretrained_dir(Path(checkpoint))
        self.device = resolve_device(device)
        if precision not in PRECISIONS:
            raise CheckpointError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if precision != "fp32" and not self.device.startswith("cuda"):
            raise CheckpointError(f"precision {precision} needs CUDA (device is {self.device})")
        self.precision = precision
        if self.device.startswith("cuda"):
            torch.backends.cudnn.benchmark = True  # fixed input shapes: pick the fastest convolutions once
        try:
            policy = ACTPolicy.from_pretrained(str(path))
        except Exception as exc:
            raise CheckpointError(f"cannot load ACT from {path}: {type(exc).__name__}: {exc}") from exc
        policy.config.device = self.device
        self.policy = policy.to(self.device).eval()
        self.backbone = self._fast_backbone(policy) if policy.config.image_features else None
        self.pre, self.post = make_pre_post_processors(
            policy.config,
            pretrained_path=str(path),
            preprocessor_overrides={"device_processor": {"device": self.device}},
        )
        if compile_mode:
            policy.model = torch.compile(policy.model, mode=compile_mode)
        self.torch = torch
        images = list(policy.config.image_features)
        self.cameras = tuple(camera_of(k) for k in images)
        self.image_shapes = {k: tuple(policy.config.image_features[k].shape) for k in images}  # (3, H, W)
        self.horizon = int(policy.config.chunk_size)
        self.checkpoint = path

    def _fast_backbone(self, policy: Any) -> CameraBatchedBackbone:
        """The backbone for inference: norm layers folded into the convolutions, every camera in one pass,
        channels-last on CUDA (the same numbers as the checkpoint's model, to float rounding)."""
        fold_frozen_norms(policy.model.backbone)
        backbone = CameraBatchedBackbone.adopt(policy.model.backbone)
        if self.device.startswith("cuda"):
            backbone.to(memory_format=self.torch_channels_last())
        return backbone

    @staticmethod
    def torch_channels_last() -> Any:
        import torch

        return torch.channels_last

    def image_size(self) -> tuple[int, int]:
        """(width, height) px of the images the policy was trained on (first camera)."""
        _, h, w = next(iter(self.image_shapes.values()))
        return w, h

    def _batch(self, obs: dict[str, Any], task: str) -> dict[str, Any]:
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
            batch = self.pre(self._batch(observation, task))
            half = {"bf16": self.torch.bfloat16, "fp16": self.torch.float16}.get(self.precision)
            if self.backbone is not None:
                self.backbone.prime([batch[k] for k in self.policy.config.image_features])
            with self.torch.autocast("cuda", dtype=half or self.torch.float32, enabled=half is not None):
                chunk = self.policy.predict_action_chunk(batch)  # (B, H, 6) normalised
            chunk = chunk.float()
            actions = self.post(chunk).to("cpu", self.torch.float32).numpy()
        return {"single_arm": actions[:, :, :5], "gripper": actions[:, :, 5:]}, {}

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        self.policy.reset()
        return {}
