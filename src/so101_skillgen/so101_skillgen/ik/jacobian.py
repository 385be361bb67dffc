"""Damped-least-squares IK (SPEC step 2), single seed per target, numpy on the CPU.

Per iteration, base frame, position first::

    e  = (p* − p, rotation error)          (partial pose: the out-of-plane swing removed, see .pose_error)
    Δq = Jᵀ (J Jᵀ + λ² I)⁻¹ · W · e        λ = 0.05, W = diag(1, 1, 1, 0.5, 0.5, 0.2)
    rotation weights × max(0.01 / |e_p|, 0.05) while |e_p| > 1 cm      (adaptive rotation scaling)
    Δq ← Δq · min(1, 0.1 / max|Δq_i|)     (clamp: no joint moves more than 0.1 rad, direction kept)
    q  ← clip(q + Δq, lower, upper)        (joint limits hold after every step)

The rotation weights act along the EE axes (x, y, approach), so 0.2 is the weight of roll about the jaws
(controlled in partial pose, which frees the approach axis' swing out of the arm's plane instead). With
``adaptive_damping`` (default) λ is 0.05 while the weighted error exceeds 1 cm and shrinks in proportion below
it (floor λ/100): in partial pose the
wrist roll only moves the jaw centre on its ~8 mm lever off the roll axis, a direction a fixed λ = 0.05
damps ~40× and leaves stalled at the millimetre level. A target that fails from its seed is retried from
``restarts`` random joint vectors iterated together (vectorized numpy, reproducible); the best is returned.

A 6-row solve on 4×4 matrices is dominated by per-call overhead, so this backend runs in numpy on float64
whatever the device of the inputs (results come back on the target's device and dtype).
"""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, J Jacobian, H Hessian as in the SPEC)

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from so101_core.arrays import F64
from torch import Tensor

from ..kinematics import ArmKinematics
from .base import IKBatchResult, IKConfig, IKError
from .pose_error import free_rotation_np

__all__ = ["JacobianIK"]

SingleSolution = tuple[F64, bool, float, float, int]
"""``(q (5,) rad, success, position_error m, rotation_error rad, iterations)`` of one target."""


def check_inputs(target: Tensor, seed: Tensor | None, dof: int, *, finite: bool = True) -> int:
    """Validate shapes (and finiteness unless ``finite`` is false: the caller checks); returns B."""
    if not isinstance(target, Tensor) or target.dim() != 3 or tuple(target.shape[1:]) != (4, 4):
        shape = tuple(target.shape) if isinstance(target, Tensor) else type(target).__name__
        raise IKError(f"target must be a tensor of shape (B, 4, 4), got {shape}")
    if finite and not bool(torch.isfinite(target).all()):
        raise IKError("target must be finite")
    b = int(target.shape[0])
    if seed is not None:
        if not isinstance(seed, Tensor) or tuple(seed.shape) != (b, dof):
            shape = tuple(seed.shape) if isinstance(seed, Tensor) else type(seed).__name__
            raise IKError(f"seed must be a tensor of shape ({b}, {dof}), got {shape}")
        if finite and not bool(torch.isfinite(seed).all()):
            raise IKError("seed must be finite")
    return b


class JacobianIK:
    """DLS IK on the URDF kinematics (see module docstring)."""

    def __init__(self, config: IKConfig, kinematics: ArmKinematics | None = None) -> None:
        self.config = config
        self.kinematics = kinematics if kinematics is not None else ArmKinematics.from_urdf()
        origins, axes, tail, lower, upper, approach = self.kinematics.numpy_params()
        self._OR = np.ascontiguousarray(origins[:, :3, :3])
        self._Op = np.ascontiguousarray(origins[:, :3, 3])
        self._axes = axes
        self._analytic: Any = None
        self._tailR = np.ascontiguousarray(tail[:3, :3])
        self._tailp = np.ascontiguousarray(tail[:3, 3])
        self._lo, self._hi = lower, upper
        self._approach = approach
        a = axes
        zero = np.zeros(len(a))
        self._K = np.stack(
            [np.stack([zero, -a[:, 2], a[:, 1]], -1), np.stack([a[:, 2], zero, -a[:, 0]], -1),
             np.stack([-a[:, 1], a[:, 0], zero], -1)], -2)  # fmt: skip
        self._AA = a[:, :, None] * a[:, None, :]
        self._I3 = np.eye(3)
        self._I6 = np.eye(6)
        self._w = np.asarray(config.weights, dtype=np.float64)
        self._n = len(a)

    # ------------------------------------------------------------------ numpy kinematics
    def fk_jacobian_np(self, q: F64) -> tuple[F64, F64, F64]:
        """``(R (3, 3), p (3,), J (6, 5))`` of the EE in the base frame at ``q`` (5,) rad (numpy)."""
        c, s = np.cos(q)[:, None, None], np.sin(q)[:, None, None]
        rots = c * self._I3 + s * self._K + (1.0 - c) * self._AA
        R = self._I3
        p = np.zeros(3)
        n = self._n
        z = np.empty((n, 3))
        o = np.empty((n, 3))
        for i in range(n):
            p = R @ self._Op[i] + p
            R = R @ self._OR[i] @ rots[i]
            z[i] = R @ self._axes[i]
            o[i] = p
        p_ee = R @ self._tailp + p
        R_ee = R @ self._tailR
        d = p_ee - o
        J = np.empty((6, n))
        J[0] = z[:, 1] * d[:, 2] - z[:, 2] * d[:, 1]
        J[1] = z[:, 2] * d[:, 0] - z[:, 0] * d[:, 2]
        J[2] = z[:, 0] * d[:, 1] - z[:, 1] * d[:, 0]
        J[3:] = z.T
        return R_ee, p_ee, J

    def fk_jacobian_many(self, q: F64) -> tuple[F64, F64, F64]:
        """:meth:`fk_jacobian_np` for S joint vectors (S, 5): ``(R (S, 3, 3), p (S, 3), J (S, 6, 5))``."""
        c, s = np.cos(q)[:, :, None, None], np.sin(q)[:, :, None, None]
        rots = c * self._I3 + s * self._K + (1.0 - c) * self._AA  # (S, n, 3, 3)
        m = len(q)
        R = np.broadcast_to(self._I3, (m, 3, 3))
        p = np.zeros((m, 3))
        n = self._n
        z = np.empty((m, n, 3))
        o = np.empty((m, n, 3))
        for i in range(n):
            p = R @ self._Op[i] + p
            R = R @ self._OR[i] @ rots[:, i]
            z[:, i] = R @ self._axes[i]
            o[:, i] = p
        p_ee = R @ self._tailp + p
        R_ee = R @ self._tailR
        J = np.empty((m, 6, n))
        J[:, :3] = np.cross(z, p_ee[:, None, :] - o).transpose(0, 2, 1)
        J[:, 3:] = z.transpose(0, 2, 1)
        return R_ee, p_ee, J

    def _error_many(self, Rt: F64, pt: F64, R: F64, p: F64, partial: bool) -> tuple[F64, F64, F64, F64]:
        """Batched :meth:`_error`: (e (S, 6), |e_p| (S,), |e_r| (S,), free directions (S, 3))."""
        e = np.empty((len(p), 6))
        e[:, :3] = pt - p
        e_full = np.stack([_log_rotation(Rt @ r.T) for r in R])
        if partial:
            e[:, 3:], m = free_rotation_np(e_full, R @ self._approach)
        else:
            e[:, 3:], m = e_full, np.zeros((len(p), 3))
        return e, np.linalg.norm(e[:, :3], axis=-1), np.linalg.norm(e[:, 3:], axis=-1), m

    def _attempt_many(self, Rt: F64, pt: F64, q: F64, partial: bool, iterations: int) -> tuple[F64, float, float, int]:
        """The DLS iteration run from S starts (S, 5) at once; stops when one converges; the best one."""
        cfg = self.config
        tol_p, tol_r, thr = cfg.position_tolerance, cfg.rotation_tolerance, cfg.rotation_scaling_threshold
        w = self._w
        q = np.clip(q, self._lo, self._hi)
        R, p, J = self.fk_jacobian_many(q)
        e, ep, er, a = self._error_many(Rt, pt, R, p, partial)
        it = 0
        while it < iterations and not bool(np.any((ep <= tol_p) & (er <= tol_r))):
            it += 1
            scale = np.where(ep > thr, np.maximum(thr / np.maximum(ep, 1e-12), cfg.rotation_scaling_min), 1.0)
            we = np.empty_like(e)
            we[:, :3] = w[:3] * e[:, :3]
            loc = np.einsum("sji,sj->si", R, e[:, 3:]) * w[3:] * scale[:, None]
            we[:, 3:] = np.einsum("sij,sj->si", R, loc)
            if partial:
                J[:, 3:] -= a[:, :, None] * np.einsum("si,sij->sj", a, J[:, 3:])[:, None, :]
            lam2 = np.full(len(q), cfg.damping**2)
            if cfg.adaptive_damping:
                werr = np.sqrt(np.einsum("si,si->s", we, e)) / thr
                lam2 = lam2 * np.clip(werr, 1e-4, 1.0)
            A = J @ J.transpose(0, 2, 1) + lam2[:, None, None] * self._I6
            dq = np.einsum("sji,sj->si", J, np.linalg.solve(A, we[:, :, None])[:, :, 0])
            big = np.max(np.abs(dq), axis=-1)
            dq *= np.minimum(1.0, cfg.max_step / np.maximum(big, 1e-12))[:, None]
            q = np.clip(q + dq, self._lo, self._hi)
            R, p, J = self.fk_jacobian_many(q)
            e, ep, er, a = self._error_many(Rt, pt, R, p, partial)
        done = (ep <= tol_p) & (er <= tol_r)
        k = int(np.argmax(done)) if bool(done.any()) else int(np.argmin(ep + 0.05 * er))
        return q[k], float(ep[k]), float(er[k]), it

    def _error(self, Rt: F64, pt: F64, R: F64, p: F64, partial: bool) -> tuple[F64, float, float, F64]:
        """(e (6,), |e_p|, |e_r|, the free rotation direction (3,); zeros for the full pose)."""
        e = np.empty(6)
        e[:3] = pt - p
        e_full = _log_rotation(Rt @ R.T)
        if partial:
            e[3:], m = free_rotation_np(e_full, R @ self._approach)
        else:
            e[3:], m = e_full, np.zeros(3)
        return e, math.sqrt(float(e[:3] @ e[:3])), math.sqrt(float(e[3:] @ e[3:])), m

    def _attempt(self, Rt: F64, pt: F64, q: F64, partial: bool, iterations: int) -> tuple[F64, float, float, int]:
        """One DLS run from ``q`` (5,)."""
        cfg = self.config
        lam2 = cfg.damping**2
        tol_p, tol_r = cfg.position_tolerance, cfg.rotation_tolerance
        w = self._w
        q = np.clip(q, self._lo, self._hi)
        R, p, J = self.fk_jacobian_np(q)
        e, ep, er, a = self._error(Rt, pt, R, p, partial)
        it = 0
        while it < iterations and not (ep <= tol_p and er <= tol_r):
            it += 1
            scale = max(cfg.rotation_scaling_threshold / ep, cfg.rotation_scaling_min) if (
                ep > cfg.rotation_scaling_threshold) else 1.0  # fmt: skip
            we = np.empty(6)
            we[:3] = w[:3] * e[:3]
            we[3:] = R @ ((R.T @ e[3:]) * w[3:] * scale)
            if partial:
                J[3:] = J[3:] - np.outer(a, a @ J[3:])
            if cfg.adaptive_damping:
                werr = math.sqrt(float(we @ e)) / cfg.rotation_scaling_threshold
                lam2 = cfg.damping**2 * min(max(werr, 1e-4), 1.0)
            dq = J.T @ np.linalg.solve(J @ J.T + lam2 * self._I6, we)
            big = float(np.max(np.abs(dq)))
            if big > cfg.max_step:
                dq *= cfg.max_step / big
            q = np.clip(q + dq, self._lo, self._hi)
            R, p, J = self.fk_jacobian_np(q)
            e, ep, er, a = self._error(Rt, pt, R, p, partial)
        return q, ep, er, it

    def solve_np(self, target: F64, seed: F64 | None = None, *, partial_pose: bool = True) -> SingleSolution:
        """One target (4, 4) → ``(q (5,), success, position_error m, rotation_error rad, iterations)``."""
        cfg = self.config
        Rt, pt = np.ascontiguousarray(target[:3, :3]), np.ascontiguousarray(target[:3, 3])
        # cold start: the closed-form solution (the neutral pose when it finds none)
        q0 = self._cold_seed(target) if seed is None else np.asarray(seed, dtype=np.float64)
        iters = cfg.jacobian.iterations
        best = self._attempt(Rt, pt, q0, partial_pose, iters)
        total = best[3]
        ok = best[1] <= cfg.position_tolerance and best[2] <= cfg.rotation_tolerance
        if not ok and cfg.jacobian.restarts > 0:
            rng = np.random.default_rng(cfg.jacobian.restart_seed)
            starts = rng.uniform(self._lo, self._hi, size=(cfg.jacobian.restarts, self._n))
            res = self._attempt_many(Rt, pt, starts, partial_pose, iters)
            total += res[3]
            if res[1] + 0.05 * res[2] < best[1] + 0.05 * best[2]:
                best = res
            ok = best[1] <= cfg.position_tolerance and best[2] <= cfg.rotation_tolerance
        return best[0], ok, best[1], best[2], total

    def _cold_seed(self, target: F64) -> F64:
        if self._analytic is None:
            from .analytic import AnalyticIK

            self._analytic = AnalyticIK(self.config, self.kinematics.to(device="cpu"))
        R = target[:3, :3]
        sol = self._analytic.solve_one(
            (tuple(R[0]), tuple(R[1]), tuple(R[2])), (float(target[0, 3]), float(target[1, 3]), float(target[2, 3]))
        )
        return np.asarray(sol.q, dtype=np.float64) if sol.ok else np.zeros(self._n)

    # ------------------------------------------------------------------ IKSolver
    def solve(self, target: Tensor, seed: Tensor | None = None, *, partial_pose: bool = True) -> IKBatchResult:
        """Solve each target (B, 4, 4) from its seed (B, 5) (default: all joints 0), one after the other."""
        b = check_inputs(target, seed, self._n, finite=False)
        tg = target.detach().to("cpu", torch.float64).numpy()
        sd = seed.detach().to("cpu", torch.float64).numpy() if seed is not None else None
        if not np.isfinite(tg).all():  # numpy: cheaper than torch for one small target
            raise IKError("target must be finite")
        if sd is not None and not np.isfinite(sd).all():
            raise IKError("seed must be finite")
        q = np.empty((b, self._n))
        ok = np.empty(b, dtype=bool)
        pe = np.empty(b)
        re = np.empty(b)
        iters = 0
        for i in range(b):
            q[i], ok[i], pe[i], re[i], it = self.solve_np(
                tg[i], None if sd is None else sd[i], partial_pose=partial_pose
            )
            iters = max(iters, it)
        dev, dt = target.device, target.dtype
        return IKBatchResult(
            q=torch.from_numpy(q).to(dev, dt),
            success=torch.from_numpy(ok).to(dev),
            position_error=torch.from_numpy(pe).to(dev, dt),
            rotation_error=torch.from_numpy(re).to(dev, dt),
            iteration_count=iters,
        )


def _log_rotation(R: F64) -> F64:
    """Axis-angle (3,) of a rotation matrix (3, 3), accurate near 0 and π (via Shepperd's quaternion)."""
    m = R
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    k = int(np.argmax((tr, m[0, 0], m[1, 1], m[2, 2])))
    if k == 0:
        s = 2.0 * math.sqrt(max(1.0 + tr, 1e-300))
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif k == 1:
        s = 2.0 * math.sqrt(max(1.0 + m[0, 0] - m[1, 1] - m[2, 2], 1e-300))
        w, x, y, z = (m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif k == 2:
        s = 2.0 * math.sqrt(max(1.0 + m[1, 1] - m[0, 0] - m[2, 2], 1e-300))
        w, x, y, z = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(max(1.0 + m[2, 2] - m[0, 0] - m[1, 1], 1e-300))
        w, x, y, z = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    v = np.array([x, y, z])
    sn = math.sqrt(x * x + y * y + z * z)
    if sn < 1e-12:
        return 2.0 * v / max(w, 1e-12)
    return v * (2.0 * math.atan2(sn, w) / sn)
