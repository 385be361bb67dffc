"""Identify each joint's servo and friction from recordings: what the twin can represent, with uncertainty.

Per joint, over the samples where it was excited (its steps and chirp; the other joints hold):

1. **Equation error** (linear least squares, the starting point). The measured effort is the servo's own
   torque, so its position loop can be read off directly: ``effort = kp · deadzone(goal(t − latency) − q, band)
   − kv · q̇`` for each latency and dead band of a grid (the pair with the smallest residual wins). The rest of
   the effort moved the joint: after MuJoCo's inverse dynamics of the rigid arm (gravity, inertia of the links)
   it is ``armature · q̈ + damping · q̇ + frictionloss · sign(q̇)``, linear again. Derivatives come from a
   Savitzky-Golay filter.
2. **Output error** (Levenberg-Marquardt). The twin replays the recorded goals from the recorded start state
   (:class:`~.arm_sim.ArmSim`, all six joints, the latency and dead band stepped as the twin does) and the seven
   parameters move to minimise the position and effort errors of the joint, each scaled by its residual at the
   start. This is what the twin will do with them, so the fit's residual is the twin's own error.

Why each parameter is observable: ``kp`` scales the effort per rad of error (holds after a step, under gravity);
``kv`` the effort per rad/s inside the servo; ``damping`` and ``frictionloss`` the torque lost to velocity and
to its sign outside the servo (motion the measured effort paid for but that did not accelerate the joint);
``armature`` the torque per rad/s² beyond the links' inertia (steps and the chirp's top end); the dead band the
error below which the effort stays zero (holds settle anywhere inside it); the latency the delay from a new goal
to the effort's response (the steps' edges).

Uncertainty: ``σ² (JᵀJ)⁻¹`` of the output-error problem at the optimum (J the Jacobian of the scaled residual),
with ``σ²`` the residual variance and the sample count reduced to its effective value for the residual's
autocorrelation (:func:`~.signals.effective_samples`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.config import SimConfig
from so101_core.sim.dynamics import PARAMETERS, ArmDynamics, JointDynamics
from so101_core.sim.scene import build_arm_model
from so101_core.sim.servo import deadzone

from .arm_sim import ArmSim
from .config import FitConfig
from .errors import RecordingError
from .recording import Recording
from .signals import effective_samples, resample, savgol, zoh

COUNT_RAD = 2.0 * math.pi / 4095  # one servo count, rad (arm joints)
LATENCY_STEP_S = 0.002  # grid of the equation-error latency search
FRICTION_VELOCITY = 0.02  # rad/s: sign(q̇) is smoothed as tanh(q̇ / this) in the equation error


@dataclass(frozen=True)
class JointFit:
    """The identification of one joint: ``estimate`` ± ``sigma`` (1σ per parameter, same units), the
    ``nominal`` it is compared with, the ``start`` of the output-error fit, and the residuals (RMS over the
    joint's samples: positions rad, efforts N·m) of the identified and the nominal twin."""

    joint: str
    estimate: JointDynamics
    sigma: dict[str, float]
    nominal: JointDynamics
    start: JointDynamics
    samples: int
    position_rms: float
    effort_rms: float
    nominal_position_rms: float
    nominal_effort_rms: float

    def significant(self, k: float) -> dict[str, bool]:
        """Per parameter: does the estimate differ from the nominal by more than ``k`` σ?"""
        out = {}
        for name in PARAMETERS:
            diff = abs(getattr(self.estimate, name) - getattr(self.nominal, name))
            sigma = self.sigma[name]
            out[name] = bool(math.isfinite(sigma) and diff > k * sigma)
        return out

    def registers(self, nominal_registers: tuple[int, int]) -> dict[str, float]:
        """The STS3215 P/D_Coefficient the identified gains correspond to, scaling the nominal twin's
        ``(P, D)`` (sim.yaml ``servo_registers``) by estimate / nominal gain."""
        p, d = nominal_registers
        kv = self.estimate.kv / self.nominal.kv if self.nominal.kv > 0 else math.nan
        return {"p_coefficient": _round(p * self.estimate.kp / self.nominal.kp), "d_coefficient": _round(d * kv)}

    def summary(self, nominal_registers: tuple[int, int] = (32, 32)) -> dict[str, Any]:
        """A YAML-friendly record (the per-arm file's ``fit`` section)."""
        return {
            "servo_registers_equivalent": self.registers(nominal_registers),
            "parameters": {
                name: {
                    "estimate": _round(getattr(self.estimate, name)),
                    "sigma": _round(self.sigma[name]),
                    "nominal": _round(getattr(self.nominal, name)),
                }
                for name in PARAMETERS
            },
            "samples": self.samples,
            "residual": {
                "position_rms_rad": _round(self.position_rms),
                "effort_rms_nm": _round(self.effort_rms),
                "nominal_position_rms_rad": _round(self.nominal_position_rms),
                "nominal_effort_rms_nm": _round(self.nominal_effort_rms),
            },
        }


@dataclass(frozen=True)
class ArmFit:
    """The fits of the identified joints, against the ``nominal`` twin."""

    joints: dict[str, JointFit]
    nominal: ArmDynamics

    def dynamics(self, significance: float, robot_id: str) -> ArmDynamics:
        """The nominal twin with each estimate that differs from it by more than ``significance`` σ."""
        out = self.nominal
        for name, fit in self.joints.items():
            sig = fit.significant(significance)
            values = {p: getattr(fit.estimate if sig[p] else fit.nominal, p) for p in PARAMETERS}
            out = out.with_joint(name, JointDynamics(**values))
        return ArmDynamics(out.joints, robot_id)


def _round(x: float) -> float:
    return float(f"{x:.5g}") if math.isfinite(x) else float(x)


@dataclass
class _Window:
    """One recording's samples of the joint being fitted."""

    rec: Recording
    mask: npt.NDArray[np.bool_]
    start: int  # index of the first sample (the simulation's start state)

    @property
    def times(self) -> F64:
        return self.rec.times[self.mask]


def _windows(recordings: list[Recording], joint: str) -> list[_Window]:
    out = []
    for rec in recordings:
        mask = rec.samples(joint)
        if np.count_nonzero(mask) >= 10:
            out.append(_Window(rec, mask, int(np.flatnonzero(mask)[0])))
    if not out:
        raise RecordingError(f"no recording has samples of {joint} to fit")
    return out


class JointFitter:
    """Fits one joint at a time (:meth:`fit`); the other joints use ``current`` (updated as joints are done)."""

    def __init__(self, config: SimConfig, nominal: ArmDynamics, settings: FitConfig) -> None:
        self.config = config
        self.nominal = nominal
        self.current = nominal
        self.settings = settings
        self.sim = ArmSim(config, nominal)
        rigid = ArmDynamics(
            tuple(JointDynamics(kp=j.kp, kv=j.kv, armature=0.0, damping=0.0, frictionloss=0.0) for j in nominal.joints)
        )
        self.rigid = build_arm_model(config, rigid)  # inverse dynamics of the links alone
        self.rigid_data = mujoco.MjData(self.rigid)
        self.force_limit = np.array([a.force_limit for a in config.robot.actuators])
        self.simulations = 0

    # ------------------------------------------------------------------ stage 1: equation error
    def equation_error(self, windows: list[_Window], j: int) -> JointDynamics:
        """Latency and dead band by grid search with kp/kv by least squares at each, then armature, damping and
        frictionloss by least squares."""
        latencies = np.arange(0.0, self.settings.latency_max_s + 1e-9, LATENCY_STEP_S)
        bands = np.arange(0.0, self.settings.deadband_max_counts + 1e-9, 0.5) * COUNT_RAD
        rows = [self._signals(w, j) for w in windows]
        # the servo law at the samples themselves: the effort is not smoothed (smoothing only the effort would
        # blur it against the goal steps and shrink kp)
        q = np.concatenate([r["q_raw"] for r in rows])
        qd = np.concatenate([r["qd_raw"] for r in rows])
        tau = np.concatenate([r["tau_raw"] for r in rows])
        free = np.abs(tau) < 0.97 * self.force_limit[j]
        best = (np.inf, 0.0, 0.0, self.nominal.joints[j].kp, self.nominal.joints[j].kv)
        for d in latencies:
            goal = np.concatenate([zoh(r["cmd_t"], r["cmd_u"], r["t_raw"] - d) for r in rows])
            error = goal - q
            for b in bands:
                a = np.column_stack([deadzone(error, np.full_like(error, b)), -qd])[free]
                coef, *_ = np.linalg.lstsq(a, tau[free], rcond=None)
                ssr = float(np.sum((a @ coef - tau[free]) ** 2))
                if ssr < best[0] and coef[0] > 0:
                    best = (ssr, float(d), float(b), float(coef[0]), float(coef[1]))
        _, latency, band, kp, kv = best
        # the rest of the effort moved the joint: on the uniform grid, every signal smoothed alike
        y = np.concatenate([r["tau"] - r["rb"] for r in rows])
        qd_s, qdd_s = np.concatenate([r["qd"] for r in rows]), np.concatenate([r["qdd"] for r in rows])
        a = np.column_stack([qdd_s, qd_s, np.tanh(qd_s / FRICTION_VELOCITY)])
        arm, damp, fric = _nonnegative_lstsq(a, y)
        nom = self.nominal.joints[j]
        return JointDynamics(
            kp=min(max(kp, 0.1 * nom.kp), 10 * nom.kp),
            kv=min(max(kv, 0.0), 1e3),
            armature=min(arm, 1.0),
            damping=min(damp, 1e2),
            frictionloss=min(fric, 10.0),
            deadband=band,
            latency_s=latency,
        )

    def _signals(self, w: _Window, j: int) -> dict[str, F64]:
        """Joint ``j``'s signals of a window: at the samples (``*_raw``: times, position, velocity from the
        smoothed derivative, effort) and on a uniform grid (q̇, q̈ by Savitzky-Golay, the smoothed effort and
        the rigid-body torque of MuJoCo's inverse dynamics), and its goals (times, values)."""
        t = w.times
        dt = float(np.median(np.diff(t)))
        grid = np.arange(t[0], t[-1], dt)
        win = self.settings.smoothing_window
        pos = resample(t, w.rec.positions[w.mask], grid)
        q = np.column_stack([savgol(pos[:, k], win, 3, 0, dt) for k in range(pos.shape[1])])
        qd = np.column_stack([savgol(pos[:, k], win, 3, 1, dt) for k in range(pos.shape[1])])
        qdd = np.column_stack([savgol(pos[:, k], win, 3, 2, dt) for k in range(pos.shape[1])])
        effort = w.rec.efforts[w.mask, j]
        tau = savgol(resample(t, effort, grid), win, 3, 0, dt)
        m, data = self.rigid, self.rigid_data
        adr, dof = self.sim.qpos_adr, self.sim.dof_adr
        rb = np.empty(grid.size)
        for k in range(grid.size):
            data.qpos[adr], data.qvel[dof], data.qacc[dof] = q[k], qd[k], qdd[k]
            mujoco.mj_inverse(m, data)
            rb[k] = data.qfrc_inverse[dof[j]]
        cmd = w.rec.commands
        return {"t_raw": t, "q_raw": w.rec.positions[w.mask, j], "qd_raw": np.interp(t, grid, qd[:, j]),
                "tau_raw": effort, "qd": qd[:, j], "qdd": qdd[:, j], "tau": tau, "rb": rb,
                "cmd_t": cmd.times, "cmd_u": cmd.targets[:, j]}  # fmt: skip

    # ------------------------------------------------------------------ stage 2: output error
    def simulate(self, windows: list[_Window], j: int, dyn: JointDynamics) -> tuple[F64, F64]:
        """Position and effort errors (simulated - measured) of joint ``j`` over ``windows`` with ``dyn``."""
        self.sim.set_dynamics(self.current.with_joint(JOINT_NAMES[j], dyn))
        dq, dtau = [], []
        for w in windows:
            rec, k0 = w.rec, w.start
            trace = self.sim.simulate(rec.commands, float(rec.times[k0]), rec.positions[k0], rec.velocities[k0],
                                      w.times)  # fmt: skip
            dq.append(trace.positions[:, j] - rec.positions[w.mask, j])
            dtau.append(trace.efforts[:, j] - rec.efforts[w.mask, j])
            self.simulations += 1
        return np.concatenate(dq), np.concatenate(dtau)

    def fit(self, recordings: list[Recording], joint: str) -> JointFit:
        """Identify ``joint`` from the samples of ``recordings`` that excite it."""
        j = JOINT_NAMES.index(joint)
        windows = _windows(recordings, joint)
        start = self.equation_error(windows, j)
        nom = self.nominal.joints[j]
        scale = np.array([max(nom.kp, 1.0), max(nom.kv, 0.05), max(nom.armature, 0.005), max(nom.damping, 0.05),
                          max(nom.frictionloss, 0.01), COUNT_RAD, 0.005])  # fmt: skip
        lower = np.array([0.05 * nom.kp, 0, 0, 0, 0, 0, 0]) / scale
        upper = np.array([1e4, 1e3, 1.0, 1e2, 10.0, 0.2, 0.5]) / scale
        nom_q, nom_tau = self.simulate(windows, j, nom)
        start_q, start_tau = self.simulate(windows, j, start)
        sq = max(float(np.sqrt(np.mean(start_q**2))), 0.5 * COUNT_RAD)
        st = max(float(np.sqrt(np.mean(start_tau**2))), 1e-3)

        def residual(p: F64) -> F64:
            dq, dtau = self.simulate(windows, j, JointDynamics.from_vector(p * scale))
            return np.concatenate([dq / sq, dtau / st])

        p, r, jac = _levenberg_marquardt(residual, start.vector() / scale, lower, upper, self.settings.iterations)
        if jac is None:
            jac = _jacobian(residual, p, r, lower, upper)
        n = r.size
        s2 = float(r @ r) / max(n - p.size, 1)
        inflation = n / effective_samples(r)
        try:
            cov = np.linalg.inv(jac.T @ jac) * s2 * inflation
            sigma = np.sqrt(np.clip(np.diag(cov), 0.0, None)) * scale
        except np.linalg.LinAlgError:
            sigma = np.full(p.size, np.inf)
        estimate = JointDynamics.from_vector(p * scale)
        est_q, est_tau = r[: r.size // 2] * sq, r[r.size // 2 :] * st
        self.current = self.current.with_joint(joint, estimate)
        return JointFit(
            joint=joint,
            estimate=estimate,
            sigma={name: float(s) for name, s in zip(PARAMETERS, sigma, strict=True)},
            nominal=nom,
            start=start,
            samples=int(sum(np.count_nonzero(w.mask) for w in windows)),
            position_rms=_rms(est_q),
            effort_rms=_rms(est_tau),
            nominal_position_rms=_rms(nom_q),
            nominal_effort_rms=_rms(nom_tau),
        )


def _rms(x: F64) -> float:
    return float(np.sqrt(np.mean(x**2))) if x.size else math.nan


def _nonnegative_lstsq(a: F64, y: F64) -> tuple[float, ...]:
    """Least squares with every coefficient >= 0 (columns whose coefficient comes out negative are dropped)."""
    active = list(range(a.shape[1]))
    coef = np.zeros(a.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(a[:, active], y, rcond=None)
        if np.all(sol >= 0):
            coef[active] = sol
            break
        active.pop(int(np.argmin(sol)))
    return tuple(float(c) for c in coef)


def _jacobian(residual: Callable[[F64], F64], p: F64, r: F64, lower: F64, upper: F64, step: float = 0.03) -> F64:
    """Forward differences (backward at an upper bound) of ``residual`` at ``p``; (n, len(p))."""
    jac = np.empty((r.size, p.size))
    for i in range(p.size):
        h = step * max(abs(p[i]), 0.3)
        if p[i] + h > upper[i]:
            h = -h
        q = p.copy()
        q[i] += h
        jac[:, i] = (residual(q) - r) / h
    return jac


def _levenberg_marquardt(
    residual: Callable[[F64], F64], p0: F64, lower: F64, upper: F64, iterations: int
) -> tuple[F64, F64, F64 | None]:
    """Minimise ``|residual(p)|²`` within the bounds; returns the best ``p``, its residual and the last Jacobian
    computed (at ``p`` or the step before it; ``None`` without iterations)."""
    p = np.clip(p0, lower, upper)
    r = residual(p)
    cost = float(r @ r)
    lam = 1e-2
    jac: F64 | None = None
    for _ in range(iterations):
        jac = _jacobian(residual, p, r, lower, upper)
        h = jac.T @ jac
        g = jac.T @ r
        improved = False
        for _ in range(4):  # a few damping increases; beyond them the start is as good as it gets
            step = np.linalg.solve(h + lam * np.diag(np.diag(h) + 1e-12), -g)
            trial = np.clip(p + step, lower, upper)
            r_trial = residual(trial)
            c_trial = float(r_trial @ r_trial)
            if c_trial < cost:
                improved = cost - c_trial > 1e-3 * cost
                p, r, cost = trial, r_trial, c_trial
                lam = max(lam / 3.0, 1e-6)
                break
            lam *= 10.0
        if not improved:
            break
    return p, r, jac


def fit_arm(
    recordings: list[Recording],
    config: SimConfig,
    nominal: ArmDynamics,
    settings: FitConfig,
    joints: tuple[str, ...] = JOINT_NAMES,
    on_joint: Callable[[JointFit], None] | None = None,
) -> ArmFit:
    """Identify ``joints`` in order (each with the ones before it already identified)."""
    fitter = JointFitter(config, nominal, settings)
    fits: dict[str, JointFit] = {}
    for joint in joints:
        fits[joint] = fitter.fit(recordings, joint)
        if on_joint is not None:
            on_joint(fits[joint])
    return ArmFit(fits, nominal)
