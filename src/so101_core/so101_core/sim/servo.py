"""The servo loop's command latency and dead band, applied physics step by physics step.

MuJoCo's position actuator holds a target for as long as it is set. A real servo acts on a goal some
milliseconds after it was sent, and does not push while the position error is inside its dead band. This
module adds both to a compiled model:

- :class:`DelayLine`: the targets commanded at times ``t`` (s), each joint seeing them ``latency_s[j]`` later
  (zero-order hold). :meth:`DelayLine.mean_targets` gives the target each joint holds on average over each
  physics step, so that a latency between two step boundaries acts in proportion (results vary smoothly with
  the latency instead of jumping by a timestep).
- :func:`step_servos`: steps the physics with those targets, moving each actuator's control to
  ``q + deadzone(target − q)`` while a joint has a dead band, so the position loop's force becomes
  ``kp · deadzone(target − q) − kv · q̇``.

Arrays are (6,) joint vectors in :data:`JOINT_NAMES` order, rad; times in s.
"""

from __future__ import annotations

from typing import NamedTuple

import mujoco
import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64


class DelayState(NamedTuple):
    """A :meth:`DelayLine.state`: the held targets, the commands still on their way, the latest command time."""

    initial: F64
    times: list[float]
    targets: list[F64]
    last: float


class DelayLine:
    """Commanded targets and when each joint sees them.

    Args:
        latency_s: (6,) per-joint latency, s (>= 0).
        initial: (6,) the target held before the first command, rad.
    """

    def __init__(self, latency_s: npt.ArrayLike, initial: npt.ArrayLike) -> None:
        self.latency = np.asarray(latency_s, dtype=np.float64).reshape(-1).copy()
        if np.any(self.latency < 0) or not np.all(np.isfinite(self.latency)):
            raise ValueError(f"latency must be finite and >= 0, got {self.latency.tolist()}")
        self._initial: F64 = np.asarray(initial, dtype=np.float64).reshape(-1).copy()
        self._times: list[float] = []
        self._targets: list[F64] = []
        self._last = -np.inf  # time of the latest command (kept when pruned)

    def reset(self, targets: npt.ArrayLike) -> None:
        """Forget every command; ``targets`` (6,) rad hold from now on."""
        self._initial = np.asarray(targets, dtype=np.float64).reshape(-1).copy()
        self._times.clear()
        self._targets.clear()
        self._last = -np.inf

    def push(self, t: float, targets: npt.ArrayLike) -> None:
        """Command ``targets`` (6,) rad at time ``t`` s (non-decreasing; a command at the same time replaces)."""
        arr = np.asarray(targets, dtype=np.float64).reshape(-1).copy()
        if t < self._last:
            raise ValueError(f"command time {t} is before the previous one {self._last}")
        self._last = float(t)
        if self._times and t == self._times[-1]:
            self._targets[-1] = arr
            return
        self._times.append(float(t))
        self._targets.append(arr)

    def extend(self, times: npt.ArrayLike, targets: npt.ArrayLike) -> None:
        """Push many commands: ``times`` (K,) s non-decreasing, ``targets`` (K, 6) rad."""
        for t, row in zip(np.asarray(times, dtype=np.float64), np.asarray(targets, dtype=np.float64), strict=True):
            self.push(float(t), row)

    def state(self) -> DelayState:
        """A copy of the line (for snapshots)."""
        return DelayState(self._initial.copy(), list(self._times), [t.copy() for t in self._targets], self._last)

    def restore(self, state: DelayState) -> None:
        self._initial, self._times = state.initial.copy(), list(state.times)
        self._targets, self._last = [t.copy() for t in state.targets], state.last

    def latest(self) -> F64:
        """The last commanded targets (6,) rad (the held ones before any command)."""
        return (self._targets[-1] if self._targets else self._initial).copy()

    def at(self, t: float) -> F64:
        """The targets (6,) each joint acts on at time ``t``."""
        out = self._initial.copy()
        if not self._times:
            return out
        times = np.asarray(self._times)
        for j, d in enumerate(self.latency):
            k = int(np.searchsorted(times + d, t, side="right")) - 1
            if k >= 0:
                out[j] = self._targets[k][j]
        return out

    def mean_targets(self, edges: npt.ArrayLike) -> F64:
        """(n, 6) mean target of each joint over each interval ``[edges[i], edges[i+1]]`` (edges (n+1,) s,
        increasing)."""
        e = np.asarray(edges, dtype=np.float64)
        n = e.size - 1
        if not self._times:
            return np.broadcast_to(self._initial, (n, self._initial.size)).copy()
        times = np.asarray(self._times)
        values = np.vstack([self._initial, *self._targets])  # (K+1, 6): before the first switch, then each
        out = np.empty((n, values.shape[1]))
        width = np.diff(e)
        for j, d in enumerate(self.latency):
            switch = times + d  # (K,) when joint j switches to targets[k]
            origin = min(float(e[0]), float(switch[0]))
            bounds = np.concatenate(([origin], switch))  # start of each value's interval
            seg = np.diff(bounds) * values[:-1, j]  # integral of each value over its interval
            cum = np.concatenate(([0.0], np.cumsum(seg)))  # integral from origin to bounds[k]
            k = np.searchsorted(switch, e, side="right")  # the value holding at each edge
            integral = cum[k] + values[k, j] * (e - bounds[k])
            out[:, j] = np.diff(integral) / width
        return out

    def prune(self, t: float) -> None:
        """Drop commands every joint has moved past by time ``t`` (keeps the line short while stepping)."""
        d_max = float(self.latency.max()) if self.latency.size else 0.0
        while self._times and self._times[0] + d_max <= t:
            self._initial = self._targets.pop(0)
            self._times.pop(0)


def deadzone(error: F64, band: F64) -> F64:
    """``sign(e) · max(|e| − band, 0)``, elementwise (rad)."""
    return np.sign(error) * np.maximum(np.abs(error) - band, 0.0)


class _Access:
    """Read / write of one index set of a MuJoCo array: a slice view when the indices are contiguous."""

    def __init__(self, array: np.ndarray, index: npt.NDArray[np.int_] | None) -> None:
        idx = np.arange(0) if index is None else np.asarray(index)
        contiguous = idx.size > 0 and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size))
        self.array = array
        self.index: slice | npt.NDArray[np.int_] = slice(int(idx[0]), int(idx[0]) + idx.size) if contiguous else idx

    def __call__(self, value: F64 | None = None) -> F64:
        if value is not None:
            self.array[self.index] = value
            return value
        return self.array[self.index]


def _view(array: np.ndarray, index: npt.NDArray[np.int_] | None) -> _Access:
    return _Access(array, index)


def step_servos(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    actuator_ids: npt.NDArray[np.int_],
    qpos_adr: npt.NDArray[np.int_],
    targets: F64,
    deadband: F64,
    ctrl_range: tuple[F64, F64],
    record: F64 | None = None,
    dof_adr: npt.NDArray[np.int_] | None = None,
) -> None:
    """Step the physics ``len(targets)`` times, step ``i`` holding ``targets[i]`` (6,) rad through the dead band.

    Args:
        targets: (n, 6) rad, one row per physics step.
        deadband: (6,) rad.
        ctrl_range: the actuators' (lower, upper) control range (6,) each, rad.
        record: optional (n, 3, 6) output: after each step the joint positions (rad), velocities (rad/s) and
            actuator forces (N·m); needs ``dof_adr``.
    """
    lo, hi = ctrl_range
    n = len(targets)
    banded = bool(np.any(deadband > 0))
    if not banded and record is None:  # hold each run of equal targets in one call
        i = 0
        while i < n:
            k = i + 1
            while k < n and np.array_equal(targets[k], targets[i]):
                k += 1
            data.ctrl[actuator_ids] = np.clip(targets[i], lo, hi)
            mujoco.mj_step(model, data, nstep=k - i)
            i = k
        return
    # Per-step work in the loop below is what a simulation costs: contiguous addresses (the arm model's) are
    # read as views, and the dead band is clip(e, -b, b) subtracted from e (= sign(e) * max(|e| - b, 0)).
    qpos, ctrl, qvel, force = (
        _view(a, i)
        for a, i in (
            (data.qpos, qpos_adr),
            (data.ctrl, actuator_ids),
            (data.qvel, dof_adr),
            (data.actuator_force, actuator_ids),
        )
    )
    below = -deadband
    clamped = not model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL
    for i in range(n):
        goal = targets[i]
        if banded:
            q = qpos()
            error = goal - q
            goal = q + error - np.minimum(np.maximum(error, below), deadband)
        ctrl(goal if clamped else np.minimum(np.maximum(goal, lo), hi))  # MuJoCo clamps to ctrlrange itself
        mujoco.mj_step(model, data)
        if record is not None:
            record[i, 0] = qpos()
            record[i, 1] = qvel()
            record[i, 2] = force()
