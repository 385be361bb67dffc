"""Scripted policies for evaluation checks and benchmarks: replay a recorded action sequence, or a constant.

:class:`ReplayPolicy` answers ``get_action`` with ``actions[k : k + H]`` (padded with the last action), where
``k`` is ``options["step"]`` (the policy node sends its control step, counted from its first action) or,
without it, the number of ``get_action`` calls since ``reset`` times ``step_per_call``. Actions are in dataset
(LeRobot) units, (N, 6).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .protocol import check_observation


class ReplayPolicy:
    """Replay ``actions`` (N, 6) in chunks of ``horizon`` (see the module docstring)."""

    def __init__(
        self,
        actions: npt.ArrayLike,
        horizon: int = 16,
        cameras: tuple[str, ...] = (),
        step_per_call: int = 1,
        gripper_override: float | None = None,
    ) -> None:
        a = np.asarray(actions, dtype=np.float32)
        if a.ndim != 2 or a.shape[1] != 6 or len(a) == 0 or not np.all(np.isfinite(a)):
            raise ValueError(f"replay: actions must be finite (N, 6) with N >= 1, got {a.shape}")
        if horizon < 1:
            raise ValueError(f"replay: horizon must be >= 1, got {horizon}")
        self.actions = a.copy()
        if gripper_override is not None:  # e.g. a policy that never closes the gripper
            self.actions[:, 5] = gripper_override
        self.horizon = horizon
        self.cameras = cameras
        self.step_per_call = step_per_call
        self.calls = 0

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        b, _ = check_observation(observation, self.cameras)
        step = options.get("step") if isinstance(options, dict) else None
        k = int(step) if isinstance(step, int) and step >= 0 else self.calls * self.step_per_call
        self.calls += 1
        idx = np.minimum(np.arange(k, k + self.horizon), len(self.actions) - 1)
        chunk = np.broadcast_to(self.actions[idx], (b, self.horizon, 6))
        return {"single_arm": chunk[:, :, :5].copy(), "gripper": chunk[:, :, 5:].copy()}, {"step": k}

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        self.calls = 0
        return {}
