"""What a recording holds for identification, and the checks that refuse a bad one.

A :class:`Recording` is what ``so101 sysid record`` leaves in its bag, as arrays (times in s from the
recording's first message, on the publishers' header clock):

- ``joint_states`` → ``times`` (N,), ``positions`` / ``velocities`` / ``efforts`` (N, 6) rad, rad/s, N·m
  (NaN where a joint's servo did not answer);
- ``arm_controller/controller_state`` → ``commands``: the goal written to the servos (``output``) at each write;
- ``sysid/segments`` → ``marks``: which joint was excited when (empty for a recording of anything else);
- ``/diagnostics`` → ``temperatures`` (M, 6) °C at ``temperature_times`` (M,) (empty when absent).

:func:`check_recording` raises :class:`~.errors.RecordingError` listing every problem found: too short, a joint
that never moved, an effort stuck at its limit (saturated current), a gap that lost data, a topic missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES

from .arm_sim import Commands
from .config import CheckConfig
from .errors import RecordingError

JOINT_STATES = "joint_states"
CONTROLLER_STATE = "arm_controller/controller_state"
SEGMENTS = "sysid/segments"


@dataclass(frozen=True)
class Mark:
    """Joint ``joint`` excited (``kind``: steps | chirp | transit | replay) from ``start`` to ``end`` s;
    ``succeeded`` is false for an attempt the arm aborted (it is not used)."""

    joint: str
    kind: str
    start: float
    end: float
    succeeded: bool = True


@dataclass(frozen=True)
class Recording:
    """One recording as arrays (see the module docstring)."""

    times: F64
    positions: F64
    velocities: F64
    efforts: F64
    commands: Commands
    marks: tuple[Mark, ...] = ()
    temperature_times: F64 = field(default_factory=lambda: np.zeros(0))
    temperatures: F64 = field(default_factory=lambda: np.zeros((0, len(JOINT_NAMES))))
    source: str = ""
    robot_id: str = ""

    @property
    def duration_s(self) -> float:
        return float(self.times[-1] - self.times[0]) if self.times.size else 0.0

    def window(self, joint: str) -> tuple[float, float] | None:
        """The span (s) of ``joint``'s excitation marks; ``None`` when it has none."""
        spans = [(m.start, m.end) for m in self.marks if m.joint == joint and m.succeeded]
        if not spans:
            return None
        return min(s for s, _ in spans), max(e for _, e in spans)

    def samples(self, joint: str) -> npt.NDArray[np.bool_]:
        """(N,) the samples that identify ``joint``: inside its marks (everything when the recording has no
        marks), with every joint read."""
        ok = np.all(np.isfinite(self.positions), axis=1) & np.all(np.isfinite(self.efforts), axis=1)
        span = self.window(joint)
        if span is None:
            return ok if not self.marks else np.zeros_like(ok)
        return ok & (self.times >= span[0]) & (self.times <= span[1])


def _gaps(rec: Recording, max_gap_s: float) -> list[str]:
    """Gaps longer than ``max_gap_s`` that lost data: measurements missing while goals were sent, or goals that
    moved across a gap further than any goal moves from one write to the next (so some were sent and not
    recorded). A driver that stalled, or whose writes failed, sent nothing meanwhile: the servos held the last
    goal, and the next one is again within one step limit of it, so such pauses are no loss."""
    out = []
    cmd_t, goals = rec.commands.times, rec.commands.targets
    steps = np.max(np.abs(np.diff(goals, axis=0)), axis=1) if len(goals) > 1 else np.zeros(0)
    usual = float(np.percentile(steps, 99)) if steps.size else 0.0
    cycle = float(np.median(np.diff(rec.times))) if rec.times.size > 1 else 0.0  # a read and its write belong together
    for k in np.flatnonzero(np.diff(rec.times) > max_gap_s):
        t0, t1 = rec.times[k], rec.times[k + 1]
        if np.any((cmd_t > t0 + cycle) & (cmd_t < t1 - cycle)):
            out.append(f"a gap of {t1 - t0:.2f} s in {JOINT_STATES} at t = {t0 - rec.times[0]:.2f} s (the "
                       "measurements are missing while goals were sent)")  # fmt: skip
            break
    for k in np.flatnonzero(np.diff(cmd_t) > max_gap_s):
        jump = float(np.max(np.abs(goals[k + 1] - goals[k])))
        if jump > 3.0 * usual + 1e-6:
            out.append(f"a gap of {cmd_t[k + 1] - cmd_t[k]:.2f} s in {CONTROLLER_STATE} at t = "
                       f"{cmd_t[k] - rec.times[0]:.2f} s (the goal moved {jump:.3f} rad across it: the goals sent "
                       "during it are missing)")  # fmt: skip
            break
    return out


def check_recording(rec: Recording, joints: tuple[str, ...], force_limits: npt.ArrayLike, cfg: CheckConfig) -> None:
    """Raise :class:`RecordingError` naming every problem that keeps ``rec`` from identifying ``joints``.

    Args:
        force_limits: (6,) the twin's force limits, N·m (saturation is measured against them).
    """
    where = rec.source or "the recording"
    problems: list[str] = []
    if rec.times.size < 2:
        raise RecordingError(f"{where}: no {JOINT_STATES} messages: the measured positions are missing")
    if rec.commands.times.size < 2:
        raise RecordingError(
            f"{where}: no {CONTROLLER_STATE} messages: the goals sent to the servos are missing "
            "(record with `so101 sysid record`, from a driver or twin that publishes it)"
        )
    if rec.duration_s < cfg.min_duration_s:
        problems.append(f"it is {rec.duration_s:.1f} s long, shorter than the {cfg.min_duration_s:g} s needed")
    problems += _gaps(rec, cfg.max_gap_s)
    efforts = rec.efforts[np.isfinite(rec.efforts)]
    if efforts.size == 0 or not np.any(efforts != 0.0):
        problems.append(f"{JOINT_STATES} carry no effort: the servos' load is missing")
    limits = np.asarray(force_limits, dtype=np.float64)
    for joint in joints:
        j = JOINT_NAMES.index(joint)
        missing = int(np.count_nonzero(~np.isfinite(rec.positions[:, j])))
        if missing:
            problems.append(f"{joint} is missing from {missing} {JOINT_STATES} messages (its servo did not answer)")
        mask = rec.samples(joint)
        if rec.marks and rec.window(joint) is None:
            problems.append(f"{joint} was never excited (no {SEGMENTS} mark names it)")
            continue
        if not np.any(mask):
            problems.append(f"{joint} has no complete sample to fit")
            continue
        q = rec.positions[mask, j]
        motion = float(np.percentile(q, 99) - np.percentile(q, 1))
        if motion < cfg.min_motion:
            problems.append(f"{joint} never moved ({motion:.3f} rad, less than {cfg.min_motion:g} rad)")
        saturated = float(np.mean(np.abs(rec.efforts[mask, j]) >= cfg.saturation_level * limits[j]))
        if saturated > cfg.max_saturated:
            problems.append(
                f"{joint} saturated: its effort sat at the {limits[j]:g} N·m limit in {saturated:.0%} of its "
                f"samples (more than {cfg.max_saturated:.0%}); lower excitation.amplitude or speed_fraction"
            )
    if problems:
        raise RecordingError(f"{where} cannot identify the twin: " + "; ".join(problems))
