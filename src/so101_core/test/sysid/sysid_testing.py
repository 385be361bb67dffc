"""Synthetic recordings for the identification tests: the twin with hidden dynamics, driven as the driver drives
a real arm (goals written every 10 ms with jitter, rounded to whole counts) and read as its servos report
(positions in counts, speeds in counts/s, load in 0.1 % steps)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.config import SimConfig
from so101_core.sim.dynamics import ArmDynamics
from so101_core.sysid.arm_sim import ArmSim, Commands
from so101_core.sysid.excitation import Segment
from so101_core.sysid.recording import Mark, Recording

COUNT = 2 * np.pi / 4095
MAX_TORQUE = 3.35


def hidden_dynamics(nominal: ArmDynamics) -> ArmDynamics:
    """A "real arm" unlike the nominal twin: gains, damping, friction and armature off by 20-50 %, a dead band
    of 3 counts and a 30 ms latency."""
    scale = {"kp": 0.8, "kv": 1.5, "armature": 1.3, "damping": 0.6, "frictionloss": 1.8}
    joints = tuple(
        replace(j, **{k: getattr(j, k) * v for k, v in scale.items()}, deadband=3 * COUNT, latency_s=0.03)
        for j in nominal.joints
    )
    return ArmDynamics(joints, "hidden")


def record(config: SimConfig, dynamics: ArmDynamics, segments: list[Segment], seed: int = 0,
           period_s: float = 0.01) -> Recording:  # fmt: skip
    """Drive ``segments`` one after the other through the arm with ``dynamics`` and record it."""
    rng = np.random.default_rng(seed)
    start = segments[0].positions[0]
    times, rows, marks, t0 = [], [], [], 0.0
    for seg in segments:
        k = np.arange(0.0, seg.duration_s + 0.3, period_s)
        cyc = t0 + k + rng.uniform(0.0, 0.002, k.size)
        pos = np.column_stack([np.interp(k, seg.times, seg.positions[:, i]) for i in range(len(JOINT_NAMES))])
        times.append(cyc)
        rows.append(np.round(pos / COUNT) * COUNT)
        if seg.joint:
            marks.append(Mark(seg.joint, seg.kind, float(cyc[0]), float(cyc[-1])))
        t0 = float(cyc[-1]) + period_s
    cmd_t = np.concatenate(times)
    commands = Commands(cmd_t + 0.0008, np.vstack(rows))  # written just after the read
    trace = ArmSim(config, dynamics).simulate(commands, 0.0, start, np.zeros(len(JOINT_NAMES)), cmd_t)
    q = np.round(trace.positions / COUNT) * COUNT
    qd = np.round(trace.velocities / COUNT) * COUNT
    effort = np.round(trace.efforts / MAX_TORQUE * 1000) / 1000 * MAX_TORQUE
    return Recording(cmd_t, q, qd, effort, commands, tuple(marks), source="synthetic")
