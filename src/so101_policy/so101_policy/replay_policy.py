"""Scripted policies for evaluation checks and benchmarks: replay a recorded action sequence, or a constant.

:class:`ReplayPolicy` answers ``get_action`` with ``actions[k : k + H]`` (padded with the last action), where
``k`` is ``options["step"]`` (the policy node sends its control step, counted from its first action; the fast
evaluator one step per row) or, without it, the number of ``get_action`` calls since ``reset`` times
``step_per_call``. Actions are in dataset
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
        asked = options.get("step") if isinstance(options, dict) else None
        steps = self._steps(asked, b)
        self.calls += 1
        idx = np.minimum(np.asarray(steps)[:, None] + np.arange(self.horizon), len(self.actions) - 1)
        chunk = self.actions[idx]  # (B, H, 6)
        said: int | list[int] = steps if isinstance(asked, list | tuple) else steps[0]  # the step(s) as asked
        return {"single_arm": chunk[:, :, :5].copy(), "gripper": chunk[:, :, 5:].copy()}, {"step": said}

    def _steps(self, step: Any, batch: int) -> list[int]:
        """Each row's step: ``step`` one int for all rows or a list of B ints (the fast evaluator's rows run
        episodes started at different times); else the call count times ``step_per_call``."""
        if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
            return [step] * batch
        if isinstance(step, list | tuple):  # a row's step missing or wrong would replay another moment: refused
            if len(step) != batch or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in step):
                raise ValueError(f"replay: options.step must be {batch} steps >= 0, one per row, got {step!r}")
            return [int(k) for k in step]
        return [self.calls * self.step_per_call] * batch

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        self.calls = 0
        return {}
