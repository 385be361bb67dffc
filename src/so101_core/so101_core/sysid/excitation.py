"""Safe excitation trajectories for identification: per joint, steps then a chirp about a raised base pose.

One joint moves at a time (the others hold the base pose, the jaw open), so each joint's servo and friction
show alone while gravity and the arm's inertia come from the model. Every trajectory:

- stays inside ``[lower + margin, upper - margin]`` of each joint (the calibrated limits the driver enforces);
- moves no joint faster than ``speed_fraction`` × the command filter's step limit (``max_step_rad`` ×
  ``rate_hz``), so the filter passes the command unchanged: the steps are ramps at that speed (the fastest the
  filter allows), the chirp's amplitude shrinks where its frequency would exceed it;
- keeps the wrist and the gripper ``clearance`` m above the mat, checked on the twin's kinematics
  (:class:`Clearance`; the amplitude shrinks until it holds, or :class:`ExcitationError` says why not).

A :class:`Segment` is one FollowJointTrajectory goal: times (s from its start; ``times[0] = 0`` is where it
starts) and positions (K, 6) rad, linearly interpolated by the driver's trajectory tracker.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64
from so101_core.robot_spec import GRIPPER, JOINT_NAMES
from so101_core.sim.config import SimConfig
from so101_core.sim.scene import build_arm_model

from .config import ExcitationConfig
from .errors import ExcitationError

MIN_AMPLITUDE = 0.05  # rad: a joint that cannot move this much about the base pose is not excited


@dataclass(frozen=True)
class Segment:
    """One trajectory goal: ``joint`` excited ("" for a transit or a replay), ``kind`` (steps | chirp |
    transit | replay), ``times`` (K,) s from its start, ``positions`` (K, 6) rad."""

    joint: str
    kind: str
    times: F64
    positions: F64

    @property
    def duration_s(self) -> float:
        return float(self.times[-1])


class Clearance:
    """Height above the mat (z = 0) of the arm's distal links (the elbow's link and everything after it)."""

    def __init__(self, config: SimConfig) -> None:
        self.model = build_arm_model(config)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self.qpos_adr = np.array([m.jnt_qposadr[m.joint(config.robot.mjcf_joint(n)).id] for n in JOINT_NAMES])
        first = int(m.jnt_bodyid[m.joint(config.robot.mjcf_joint("elbow_flex")).id])
        distal = {first}
        for b in range(first + 1, m.nbody):
            if int(m.body_parentid[b]) in distal:
                distal.add(b)
        self.geoms = np.array([g for g in range(m.ngeom) if int(m.geom_bodyid[g]) in distal])

    def height(self, q: npt.ArrayLike) -> float:
        """Lowest point (m) of the distal links' geom boxes at pose ``q`` (6,) rad."""
        self.data.qpos[self.qpos_adr] = q
        mujoco.mj_kinematics(self.model, self.data)
        lowest = np.inf
        for g in self.geoms:
            rot = self.data.geom_xmat[g].reshape(3, 3)
            centre, half = self.model.geom_aabb[g, :3], self.model.geom_aabb[g, 3:]
            z = self.data.geom_xpos[g, 2] + rot[2] @ centre - np.abs(rot[2]) @ half
            lowest = min(lowest, float(z))
        return lowest


def joint_span(cfg: ExcitationConfig, joint: int, lower: F64, upper: F64, clearance: Clearance | None) -> float:
    """The amplitude (rad) joint ``joint`` may move each way about the base pose: the configured one, shrunk to
    the limits (minus the margin), the open jaw and the clearance; raises when under :data:`MIN_AMPLITUDE`."""
    base = np.asarray(cfg.base_pose, dtype=np.float64)
    lo = lower[joint] + cfg.limit_margin
    if JOINT_NAMES[joint] == GRIPPER:
        lo = max(lo, cfg.gripper_min)
    hi = upper[joint] - cfg.limit_margin
    amp = min(cfg.amplitude, base[joint] - lo, hi - base[joint])
    name = JOINT_NAMES[joint]
    if amp < MIN_AMPLITUDE:
        raise ExcitationError(
            f"{name}: the base pose {base[joint]:.3f} rad leaves only {max(amp, 0.0):.3f} rad to move within "
            f"[{lo:.3f}, {hi:.3f}] (limits less the margin); move excitation.base_pose inside them"
        )
    while clearance is not None:
        heights = [clearance.height(base + a * np.eye(len(base))[joint]) for a in np.linspace(-amp, amp, 9)]
        if min(heights) >= cfg.clearance:
            break
        amp *= 0.8
        if amp < MIN_AMPLITUDE:
            raise ExcitationError(
                f"{name}: moving it about the base pose brings the arm within {cfg.clearance} m of the mat; "
                "raise excitation.base_pose"
            )
    return float(amp)


def step_segment(cfg: ExcitationConfig, joint: int, amplitude: float, speed: float) -> Segment:
    """Ramps at ``speed`` rad/s to ±fraction × ``amplitude`` about the base pose, each held ``hold_s``, then
    back to the base pose."""
    base = np.asarray(cfg.base_pose, dtype=np.float64)
    flip = -1.0 if cfg.seed % 2 else 1.0
    offsets = [s * flip * f * amplitude for f in cfg.step_fractions for s in (1.0, -1.0)] + [0.0]
    times, rows, here, t = [0.0], [base.copy()], 0.0, 0.0
    for off in offsets:
        t += abs(off - here) / speed
        row = base.copy()
        row[joint] += off
        times += [t, t + cfg.hold_s]
        rows += [row, row]
        t += cfg.hold_s
        here = off
    return Segment(JOINT_NAMES[joint], "steps", np.array(times), np.vstack(rows))


def chirp_segment(cfg: ExcitationConfig, joint: int, amplitude: float, speed: float) -> Segment:
    """A linear chirp from ``chirp_hz[0]`` to ``chirp_hz[1]`` over ``chirp_s``, faded in and out over
    ``taper_s``, its amplitude shrunk where the speed would exceed ``speed`` rad/s."""
    base = np.asarray(cfg.base_pose, dtype=np.float64)
    f0, f1 = cfg.chirp_hz
    t = np.arange(0.0, cfg.chirp_s + 1e-9, cfg.point_period_s)
    freq = f0 + (f1 - f0) * t / cfg.chirp_s
    phase0 = float(np.random.default_rng(cfg.seed + 7919 * joint).uniform(0.0, 2.0 * np.pi))
    phase = 2.0 * np.pi * (f0 * t + 0.5 * (f1 - f0) * t**2 / cfg.chirp_s) + phase0
    amp = np.minimum(amplitude, speed / (2.0 * np.pi * freq))
    ramp = np.ones_like(t)
    if cfg.taper_s > 0:
        ramp = np.clip(np.minimum(t, cfg.chirp_s - t) / cfg.taper_s, 0.0, 1.0)
        ramp = np.sin(0.5 * np.pi * ramp) ** 2
    wave = amp * ramp * np.sin(phase)  # starts and ends at the base pose (the taper is 0 there)
    fastest = float(np.max(np.abs(np.diff(wave)) / cfg.point_period_s)) if wave.size > 1 else 0.0
    if fastest > speed:
        wave *= speed / fastest
    rows = np.tile(base, (t.size, 1))
    rows[:, joint] += wave
    return Segment(JOINT_NAMES[joint], "chirp", t.astype(np.float64), rows)


def transit_segment(start: npt.ArrayLike, goal: npt.ArrayLike, speed: float, hold_s: float = 0.5) -> Segment:
    """Straight in joint space from ``start`` to ``goal`` (6,) rad, the slowest joint at ``speed`` rad/s, then
    held ``hold_s``."""
    a, b = np.asarray(start, dtype=np.float64), np.asarray(goal, dtype=np.float64)
    duration = max(float(np.max(np.abs(b - a))) / speed, 0.1)
    return Segment("", "transit", np.array([0.0, duration, duration + hold_s]), np.vstack([a, b, b]))


def replay_segment(positions: npt.ArrayLike, period_s: float, kind: str = "replay") -> Segment:
    """A recorded joint trajectory (T, 6) rad, one row every ``period_s`` s, replayed as it was."""
    rows = np.asarray(positions, dtype=np.float64)
    return Segment("", kind, period_s * np.arange(len(rows), dtype=np.float64), rows)


def pick_and_place_segment(config: SimConfig, seed: int = 0) -> Segment:
    """The scripted expert's commanded joint trajectory of one nominal pick-and-place episode in the twin (its
    control rate), as a replay: a realistic motion to validate a twin on."""
    from so101_core.sim.randomization import DRConfig
    from so101_core.sim.rollout import run_scripted_episode
    from so101_core.sim.twin import Twin

    with Twin(config, DRConfig.disabled()) as twin:
        episode = run_scripted_episode(twin, seed, record=True)
        period = twin.control_period
    return replay_segment(episode.actions, period, "replay")


def plan_excitation(
    cfg: ExcitationConfig,
    lower: npt.ArrayLike,
    upper: npt.ArrayLike,
    max_speed: float,
    clearance: Clearance | None = None,
) -> list[Segment]:
    """Steps then a chirp for each of ``cfg.joints``, each starting and ending at the base pose.

    Args:
        lower / upper: (6,) joint limits, rad (the driver's: calibrated range ∩ the twin's).
        max_speed: the command filter's step limit as a speed, rad/s.
        clearance: the mat check (None: not checked).
    """
    lo, hi = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    base = np.asarray(cfg.base_pose, dtype=np.float64)
    outside = [n for i, n in enumerate(JOINT_NAMES) if not lo[i] <= base[i] <= hi[i]]
    if outside:
        raise ExcitationError(f"excitation.base_pose is outside the joint limits for {outside}")
    if clearance is not None and clearance.height(base) < cfg.clearance:
        raise ExcitationError(f"excitation.base_pose puts the arm within {cfg.clearance} m of the mat")
    speed = cfg.speed_fraction * max_speed
    out = []
    for name in cfg.joints:
        j = JOINT_NAMES.index(name)
        amp = joint_span(cfg, j, lo, hi, clearance)
        out.append(step_segment(cfg, j, amp, speed))
        if cfg.chirp_s > 0:
            out.append(chirp_segment(cfg, j, amp, speed))
    return out
