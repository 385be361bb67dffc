"""What a policy server hosts: a policy that maps one N1.6 observation to an action chunk."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .protocol import observation

WARMUP_IMAGE_SIZE = (640, 480)  # (width, height) px: the cameras' own size, for a policy that does not name one


class PolicyBackend(Protocol):
    """A policy behind the server. ``get_action`` takes a validated nested observation and returns
    ``(action, info)`` with ``action = {"single_arm": (B, H, 5), "gripper": (B, H, 1)}`` float32 in dataset units."""

    cameras: tuple[str, ...]
    horizon: int

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]: ...
    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]: ...


def warmup_observation(backend: PolicyBackend, task: str = "warm-up") -> dict[str, Any]:
    """One N1.6 observation shaped like a real request to ``backend``: its cameras at its image size
    (``backend.image_size()`` where it has one, else :data:`WARMUP_IMAGE_SIZE`), mid-grey frames, a zero state."""
    size = getattr(backend, "image_size", None)
    width, height = size() if callable(size) else WARMUP_IMAGE_SIZE
    frames = {cam: np.full((height, width, 3), 128, np.uint8) for cam in backend.cameras}
    return observation(frames, np.zeros(6, np.float32), task)
