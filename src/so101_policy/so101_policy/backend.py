"""What a policy server hosts: a policy that maps one N1.6 observation to an action chunk."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .protocol import LANGUAGE_KEY, MODALITY_TAG, observation

ARM_KEYS = ("single_arm", "gripper")
WARMUP_IMAGE_SIZE = (640, 480)  # (width, height) px: the cameras' own size, for a policy that does not name one


class PolicyBackend(Protocol):
    """A policy behind the server. ``get_action`` takes a validated nested observation and returns
    ``(action, info)`` with ``action = {"single_arm": (B, H, 5), "gripper": (B, H, 1)}`` float32 in dataset units."""

    cameras: tuple[str, ...]
    horizon: int

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]: ...
    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ModalityConfig:
    """GR00T's ModalityConfig (the fields our policies fill): which steps and keys one modality uses."""

    delta_indices: tuple[int, ...]
    modality_keys: tuple[str, ...]

    def wire(self) -> dict[str, Any]:
        """The N1.6 wire form: ``{"__ModalityConfig_class__": True, "as_json": <pydantic-style JSON string>}``."""
        body = {"delta_indices": list(self.delta_indices), "modality_keys": list(self.modality_keys)}
        return {MODALITY_TAG: True, "as_json": json.dumps(body)}


def modality_config(cameras: tuple[str, ...], horizon: int) -> dict[str, Any]:
    """``get_modality_config`` reply for a policy seeing ``cameras`` and returning ``horizon`` actions."""
    return {
        "video": ModalityConfig((0,), cameras).wire(),
        "state": ModalityConfig((0,), ARM_KEYS).wire(),
        "action": ModalityConfig(tuple(range(horizon)), ARM_KEYS).wire(),
        "language": ModalityConfig((0,), (LANGUAGE_KEY,)).wire(),
    }


def warmup_observation(backend: PolicyBackend, task: str = "warm-up") -> dict[str, Any]:
    """One N1.6 observation shaped like a real request to ``backend``: its cameras at its image size
    (``backend.image_size()`` where it has one, else :data:`WARMUP_IMAGE_SIZE`), mid-grey frames, a zero state."""
    size = getattr(backend, "image_size", None)
    width, height = size() if callable(size) else WARMUP_IMAGE_SIZE
    frames = {cam: np.full((height, width, 3), 128, np.uint8) for cam in backend.cameras}
    return observation(frames, np.zeros(6, np.float32), task)
