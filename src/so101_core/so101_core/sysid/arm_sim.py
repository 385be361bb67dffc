"""The arm alone (:func:`~so101_core.sim.scene.build_arm_model`) with given dynamics, two ways:

- :class:`ArmSim` replays recorded commands from a recorded start state and returns positions, velocities
  and actuator forces at the recorded sample times (what identification and validation compare);
- :class:`ArmPlant` is stepped to wall-clock time while goals arrive one servo at a time: the "real arm"
  standing behind the Feetech emulator in tests and benchmarks.

Both use the twin's servo loop (:mod:`so101_core.sim.servo`): latency, dead band, position actuator.
Arrays are (6,) or (N, 6) in :data:`JOINT_NAMES` order; rad, rad/s, N·m, s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.config import SimConfig
from so101_core.sim.dynamics import ArmDynamics
from so101_core.sim.scene import build_arm_model
from so101_core.sim.servo import DelayLine, step_servos


@dataclass(frozen=True)
class Commands:
    """Goals sent to the servos: ``times`` (K,) s, non-decreasing; ``targets`` (K, 6) rad."""

    times: F64
    targets: F64


@dataclass(frozen=True)
class Trace:
    """Simulated ``positions``, ``velocities`` and ``efforts`` (actuator forces), each (S, 6), at ``times`` (S,)."""

    times: F64
    positions: F64
    velocities: F64
    efforts: F64


class _ArmModel:
    """The compiled arm, its addresses, and writing :class:`ArmDynamics` into it in place."""

    def __init__(self, config: SimConfig, dynamics: ArmDynamics) -> None:
        self.config = config
        self.model = build_arm_model(config)
        self.data = mujoco.MjData(self.model)
        m = self.model
        joints = [int(m.joint(config.robot.mjcf_joint(n)).id) for n in JOINT_NAMES]
        self.qpos_adr = m.jnt_qposadr[joints].copy()
        self.dof_adr = m.jnt_dofadr[joints].copy()
        self.actuator_ids = np.array(
            [int(np.flatnonzero((m.actuator_trnid[:, 0] == j) & (m.actuator_trntype == 0))[0]) for j in joints]
        )
        self.ctrl_range = (m.actuator_ctrlrange[self.actuator_ids, 0].copy(),
                           m.actuator_ctrlrange[self.actuator_ids, 1].copy())  # fmt: skip
        self.force_limit = np.array([a.force_limit for a in config.robot.actuators])
        self.dynamics = dynamics
        self.set_dynamics(dynamics)

    def set_dynamics(self, dynamics: ArmDynamics) -> None:
        m, a, d = self.model, self.actuator_ids, self.dof_adr
        m.actuator_gainprm[a, 0] = dynamics.column("kp")
        m.actuator_biasprm[a, 1] = -dynamics.column("kp")
        m.actuator_biasprm[a, 2] = -dynamics.column("kv")
        m.dof_armature[d] = dynamics.column("armature")
        m.dof_damping[d] = dynamics.column("damping")
        m.dof_frictionloss[d] = dynamics.column("frictionloss")
        self.dynamics = dynamics


class ArmSim(_ArmModel):
    """Replays commands on the arm with ``dynamics`` (set again with :meth:`set_dynamics`)."""

    def simulate(self, commands: Commands, start: float, q0: npt.ArrayLike, qd0: npt.ArrayLike,
                 sample_times: npt.ArrayLike) -> Trace:  # fmt: skip
        """Start at time ``start`` (s, the clock of ``commands``) in state ``q0`` / ``qd0`` (6,), hold the
        commands (those before ``start`` are the history still on its way), sample at ``sample_times``
        (S,) >= ``start`` by linear interpolation between physics steps."""
        times = np.asarray(sample_times, dtype=np.float64)
        m, data = self.model, self.data
        h = m.opt.timestep
        mujoco.mj_resetData(m, data)
        data.qpos[self.qpos_adr] = q0
        data.qvel[self.dof_adr] = qd0
        data.time = start
        mujoco.mj_forward(m, data)
        end = float(times[-1]) if times.size else start
        n = max(1, math.ceil((end - start) / h - 1e-9))
        edges = start + h * np.arange(n + 1)
        line = DelayLine(self.dynamics.column("latency_s"), commands.targets[0] if len(commands.times) else q0)
        keep = commands.times <= end
        line.extend(commands.times[keep], commands.targets[keep])
        targets = line.mean_targets(edges)
        record = np.empty((n, 3, len(JOINT_NAMES)))
        step_servos(m, data, self.actuator_ids, self.qpos_adr, targets, self.dynamics.column("deadband"),
                    self.ctrl_range, record, self.dof_adr)  # fmt: skip
        grid = edges[1:]
        first = np.array([np.asarray(q0, float), np.asarray(qd0, float), record[0, 2]])
        states = np.concatenate([first[None], record])  # (n+1, 3, 6) at edges
        out = np.empty((3, times.size, len(JOINT_NAMES)))
        for k in range(3):
            for j in range(len(JOINT_NAMES)):
                out[k, :, j] = np.interp(times, np.concatenate(([start], grid)), states[:, k, j])
        return Trace(times, out[0], out[1], out[2])


class ArmPlant(_ArmModel):
    """The arm stepped to wall-clock time; goals arrive per joint at wall time ``t`` (s, any monotonic clock).

    Args:
        config: sim.yaml (model, gains' force limits).
        dynamics: the arm's (hidden) dynamics.
        q0: (6,) the pose it starts in, rad.
    """

    def __init__(self, config: SimConfig, dynamics: ArmDynamics, q0: npt.ArrayLike) -> None:
        super().__init__(config, dynamics)
        q = np.asarray(q0, dtype=np.float64)
        self.data.qpos[self.qpos_adr] = q
        self.data.ctrl[self.actuator_ids] = np.clip(q, *self.ctrl_range)
        mujoco.mj_forward(self.model, self.data)
        self.line = DelayLine(dynamics.column("latency_s"), q)
        self._epoch: float | None = None  # wall time of sim time 0
        self._torque = np.ones(len(JOINT_NAMES), dtype=bool)
        self._limit = np.ones(len(JOINT_NAMES))

    def _sim_time(self, t: float) -> float:
        if self._epoch is None:
            self._epoch = t
        return t - self._epoch

    def command(self, t: float, joint: int, target: float) -> None:
        """Joint ``joint`` (index) is sent ``target`` rad at wall time ``t``."""
        self.advance(t)
        targets = self.line.latest()
        targets[joint] = target
        self.line.push(max(self._sim_time(t), float(self.data.time)), targets)

    def advance(self, t: float) -> None:
        """Step the physics to wall time ``t`` (whole timesteps; the remainder waits for the next call)."""
        h = self.model.opt.timestep
        n = int((self._sim_time(t) - self.data.time) / h + 1e-9)
        if n <= 0:
            return
        n = min(n, round(0.5 / h))  # a stalled caller does not make the arm jump ahead by more than 0.5 s
        edges = self.data.time + h * np.arange(n + 1)
        targets = self.line.mean_targets(edges)
        step_servos(self.model, self.data, self.actuator_ids, self.qpos_adr, targets,
                    self.dynamics.column("deadband"), self.ctrl_range)  # fmt: skip
        self.line.prune(float(self.data.time))
        if self._epoch is not None and self._sim_time(t) - self.data.time > h:  # the capped case: catch up the clock
            self._epoch = t - float(self.data.time)

    def set_torque(self, joint: int, enabled: bool, limit: float = 1.0) -> None:
        """Torque on/off and its limit (fraction of sim.yaml's force_limit) for one joint."""
        self._torque[joint], self._limit[joint] = enabled, min(max(limit, 0.0), 1.0)
        a = self.actuator_ids[joint]
        kp, kv = self.dynamics.joints[joint].kp, self.dynamics.joints[joint].kv
        on = 1.0 if enabled else 0.0
        self.model.actuator_gainprm[a, 0] = on * kp
        self.model.actuator_biasprm[a, 1] = -on * kp
        self.model.actuator_biasprm[a, 2] = -on * kv
        f = self.force_limit[joint] * self._limit[joint]
        self.model.actuator_forcerange[a] = (-f, f)

    def place(self, joint: int, q: float) -> None:
        """Move joint ``joint`` to ``q`` rad by hand (at rest)."""
        self.data.qpos[self.qpos_adr[joint]] = q
        self.data.qvel[self.dof_adr[joint]] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def reading(self, joint: int) -> tuple[float, float, float]:
        """(position rad, velocity rad/s, actuator force N·m) of joint ``joint`` now."""
        return (float(self.data.qpos[self.qpos_adr[joint]]), float(self.data.qvel[self.dof_adr[joint]]),
                float(self.data.actuator_force[self.actuator_ids[joint]]))  # fmt: skip
