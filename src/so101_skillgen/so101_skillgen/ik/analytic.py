"""Closed-form IK of the SO-101 arm: pan + three parallel pitch joints + roll (every branch, limits, nearest).

Geometry (checked from the URDF chain at construction, :class:`~so101_skillgen.kinematics.KinematicsError`
otherwise): the pan axis is vertical; shoulder_lift, elbow_flex and wrist_flex turn about one direction
``n`` (the *pitch axis*, horizontal, ⟂ the arm's vertical plane); wrist_roll turns about an axis ⟂ ``n``
and the approach axis (URDF ``gripper_frame_link`` z) lies along it. Hence the approach axis always lies
in the arm's vertical plane: its swing out of that plane is the one rotation the arm cannot make, and
partial pose frees exactly that (the target's approach axis is projected onto the plane the target
position defines). Roll about the approach axis *is* controlled (wrist_roll; the EE origin sits 7.9 mm
off the roll axis, so position and roll are coupled).

Solve (per target): the roll-axis point ``P = p* − R*·o`` (``o``: the tool point's offset from the roll
axis, EE frame) fixes the pan angle through the arm's constant lateral offset (two branches: reaching
forward or over the back); the projected approach direction fixes the pitch sum and the roll; the
wrist_flex axis point is then a planar two-link problem (elbow up / down). ``P`` depends on the projected
orientation, which depends on the pan angle: three fixed-point passes (the coupling is the 7.9 mm
offset; the error after three is below 1e-12 m). Up to four solutions; those inside the joint limits are
ranked by distance to the seed.
"""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose)

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..kinematics import ArmKinematics, KinematicsError
from .base import IKBatchResult, IKConfig

__all__ = ["AnalyticIK", "AnalyticSolution"]

Vec = tuple[float, float, float]
Mat = tuple[Vec, Vec, Vec]  # rows
_TWO_PI = 2.0 * math.pi
_TOL = 1e-4  # structural checks: the URDF's rounded rpy angles leave ~4e-6 rad of misalignment


def _vec(a: np.ndarray | tuple[float, ...]) -> Vec:
    return (float(a[0]), float(a[1]), float(a[2]))


def _mat(a: np.ndarray) -> Mat:
    return (
        (float(a[0, 0]), float(a[0, 1]), float(a[0, 2])),
        (float(a[1, 0]), float(a[1, 1]), float(a[1, 2])),
        (float(a[2, 0]), float(a[2, 1]), float(a[2, 2])),
    )


def _mv(M: Mat, v: Vec) -> Vec:
    return (
        M[0][0] * v[0] + M[0][1] * v[1] + M[0][2] * v[2],
        M[1][0] * v[0] + M[1][1] * v[1] + M[1][2] * v[2],
        M[2][0] * v[0] + M[2][1] * v[1] + M[2][2] * v[2],
    )


def _mtv(M: Mat, v: Vec) -> Vec:
    """Mᵀ·v."""
    return (
        M[0][0] * v[0] + M[1][0] * v[1] + M[2][0] * v[2],
        M[0][1] * v[0] + M[1][1] * v[1] + M[2][1] * v[2],
        M[0][2] * v[0] + M[1][2] * v[1] + M[2][2] * v[2],
    )


def _mm(A: Mat, B: Mat) -> Mat:
    c0 = _mv(A, (B[0][0], B[1][0], B[2][0]))
    c1 = _mv(A, (B[0][1], B[1][1], B[2][1]))
    c2 = _mv(A, (B[0][2], B[1][2], B[2][2]))
    return ((c0[0], c1[0], c2[0]), (c0[1], c1[1], c2[1]), (c0[2], c1[2], c2[2]))


def _rz(t: float) -> Mat:
    c, s = math.cos(t), math.sin(t)
    return ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a: Vec, b: Vec) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _rot_onto(a: Vec, b: Vec) -> Mat:
    """The smallest rotation taking unit ``a`` onto unit ``b`` (Rodrigues; a ≈ −b is never asked for here)."""
    v = _cross(a, b)
    c = _dot(a, b)
    k = 1.0 / (1.0 + c) if c > -1.0 + 1e-12 else 0.0
    vx, vy, vz = v
    return (
        (1.0 - k * (vy * vy + vz * vz), k * vx * vy - vz, k * vx * vz + vy),
        (k * vx * vy + vz, 1.0 - k * (vx * vx + vz * vz), k * vy * vz - vx),
        (k * vx * vz - vy, k * vy * vz + vx, 1.0 - k * (vx * vx + vy * vy)),
    )


def _wrap(x: float) -> float:
    return (x + math.pi) % _TWO_PI - math.pi


@dataclass(frozen=True)
class AnalyticSolution:
    """Best solution for one target: ``q`` (5,) rad, ``ok`` inside the limits and reached,
    ``branches`` solutions found inside the limits, ``swing`` rad: the out-of-plane swing of the target's
    approach axis that partial pose left free, ``message`` why not ``ok``."""

    q: tuple[float, ...]
    ok: bool
    branches: int
    swing: float
    message: str = ""


class AnalyticIK:
    """Closed-form IK (see the module docstring); implements :class:`~.base.IKSolver`.

    ``tool_point`` (3,) m, EE frame: the point whose position is matched (default ``config.tool_point``).
    """

    def __init__(self, config: IKConfig, kinematics: ArmKinematics, tool_point: Vec | None = None) -> None:
        self.config = config
        self.kinematics = kinematics
        origins, axes, tail, lower, upper, approach = kinematics.to(device="cpu").numpy_params()
        if origins.shape[0] != 5 or not np.allclose(axes, [0.0, 0.0, 1.0], atol=_TOL):
            raise KinematicsError("analytic IK needs 5 joints, each turning about its frame's z axis")
        R0 = origins[0, :3, :3]
        if abs(abs(R0[2, 2]) - 1.0) > _TOL:
            raise KinematicsError("analytic IK needs a vertical shoulder_pan axis")
        R1 = origins[1, :3, :3]
        c = R1[:, 2]  # pitch axis in the pan frame
        if abs(c[2]) > _TOL:
            raise KinematicsError("analytic IK needs the pitch axes perpendicular to the pan axis")
        for k in (2, 3):
            Rk = origins[k, :3, :3]
            if abs(Rk[2, 2] - 1.0) > _TOL:
                raise KinematicsError(f"joint {kinematics.joint_names[k]} is not parallel to shoulder_lift")
        R4 = origins[4, :3, :3]
        if abs(R4[2, 2]) > _TOL:
            raise KinematicsError("analytic IK needs wrist_roll perpendicular to the pitch axes")
        Rt, tt = tail[:3, :3], tail[:3, 3]
        a_roll = Rt @ np.asarray(approach)  # approach axis in the roll frame
        if abs(abs(a_roll[2]) - 1.0) > _TOL:
            raise KinematicsError("analytic IK needs the approach axis along wrist_roll")
        self._sa = float(np.sign(a_roll[2]))
        self._approach = _vec(approach)
        self._R0, self._t0 = _mat(R0), _vec(origins[0, :3, 3])
        self._R1, self._t1 = _mat(R1), _vec(origins[1, :3, 3])
        self._kappa = math.atan2(float(c[1]), float(c[0]))
        self._g2 = math.atan2(float(origins[2, 1, 0]), float(origins[2, 0, 0]))
        self._g3 = math.atan2(float(origins[3, 1, 0]), float(origins[3, 0, 0]))
        t2, t3, t4 = origins[2, :3, 3], origins[3, :3, 3], origins[4, :3, 3]
        self._L2, self._d2 = math.hypot(t2[0], t2[1]), math.atan2(t2[1], t2[0])
        self._L3, self._d3 = math.hypot(t3[0], t3[1]), math.atan2(t3[1], t3[0])
        r = R4[:, 2]
        self._rho_r = math.atan2(float(r[1]), float(r[0]))  # roll axis angle in the wrist_flex frame
        w = t4 + tt[2] * r  # wrist_flex axis → roll-axis point (wrist_flex frame)
        self._w = (float(w[0]), float(w[1]))
        lateral = float(t2[2] + t3[2] + w[2])
        self._D = lateral + float(c @ origins[1, :3, 3])
        self._r4c0 = (float(R4[0, 0]), float(R4[1, 0]), float(R4[2, 0]))
        self._r4c1 = (float(R4[0, 1]), float(R4[1, 1]), float(R4[2, 1]))
        self._rt0 = (float(Rt[0, 0]), float(Rt[0, 1]), float(Rt[0, 2]))
        tool_point = tool_point if tool_point is not None else config.tool_point
        off = Rt.T @ np.array([tt[0], tt[1], 0.0]) + np.asarray(tool_point, dtype=np.float64)
        self._o = _vec(off)
        self._lo = tuple(float(x) for x in lower)
        self._hi = tuple(float(x) for x in upper)
        self.tool_point = _vec(tool_point)

    # ------------------------------------------------------------------ one target
    def _pitch_axis(self, q1: float) -> Vec:
        c = math.cos(q1 + self._kappa), math.sin(q1 + self._kappa)
        return _mv(self._R0, (c[0], c[1], 0.0))

    def _pan(self, P: Vec) -> tuple[float, float] | None:
        u = _mtv(self._R0, (P[0] - self._t0[0], P[1] - self._t0[1], P[2] - self._t0[2]))
        rho = math.hypot(u[0], u[1])
        if rho < abs(self._D) + 1e-9:
            return None
        alpha = math.atan2(u[1], u[0])
        b = math.acos(self._D / rho)
        return alpha - self._kappa + b, alpha - self._kappa - b

    def out_of_plane(self, R: Mat, p: Vec, pan_near: float) -> float | None:
        """Signed sine of the target approach axis's swing out of the arm's plane (``a·n``), for the pan branch
        nearest ``pan_near`` rad that the target position sets; None inside the pan's dead zone. Zero exactly
        where a partial-pose target needs no projection: the root a point + axis tracker searches."""
        o = _mv(R, self._o)
        pans = self._pan((p[0] - o[0], p[1] - o[1], p[2] - o[2]))
        if pans is None:
            return None
        q1 = min(pans, key=lambda x: abs(_wrap(x - pan_near)))
        return _dot(_mv(R, self._approach), self._pitch_axis(q1))

    def solutions(self, R: Mat, p: Vec, partial_pose: bool = True) -> list[tuple[float, ...]]:
        """Every solution (5,) rad inside the joint limits of one target (best-matching pan branch)."""
        zero = (0.0, 0.0, 0.0, 0.0, 0.0)
        sols, swings, _ = self._enumerate(R, p, partial_pose)
        qs = [self._fit_limits(s, zero) for s in sols]
        inside = [sw for q, sw in zip(qs, swings, strict=True) if self._inside(q)]
        cap = min(inside) + 1e-4 if inside else -1.0
        return [q for q, sw in zip(qs, swings, strict=True) if self._inside(q) and sw <= cap]

    def solve_one(
        self, R: Mat, p: Vec, seed: tuple[float, ...] | None = None, partial_pose: bool = True
    ) -> AnalyticSolution:
        """Solve one EE target (rotation rows ``R``, position ``p`` m, base frame) nearest ``seed`` (5,) rad."""
        seed = seed if seed is not None else (0.0, 0.0, 0.0, 0.0, 0.0)
        sols, swings, reach_msg = self._enumerate(R, p, partial_pose)
        return self._select(sols, swings, seed, reach_msg)

    def _enumerate(self, R: Mat, p: Vec, partial_pose: bool) -> tuple[list[tuple[float, ...]], list[float], str]:
        """Raw solutions (wrapped angles), the swing each leaves free, and why there are none."""
        sols: list[tuple[float, ...]] = []
        swings: list[float] = []  # per solution: the out-of-plane swing its pan branch leaves free
        reach_msg = "target out of reach"
        a = _mv(R, self._approach)
        o0 = _mv(R, self._o)
        pans0 = self._pan((p[0] - o0[0], p[1] - o0[1], p[2] - o0[2]))
        branches: tuple[int, ...] = (0, 1)
        if pans0 is not None:  # a pan angle far outside its limits cannot be fixed by the rest: skip it
            lo, hi = self._lo[0] - 0.05, self._hi[0] + 0.05
            keep = tuple(b for b in (0, 1) if lo <= _wrap(pans0[b]) <= hi)
            branches = keep or branches
        for branch in branches:
            Rp = R
            q1 = 0.0
            ok = True
            branch_swing = 0.0
            q1_prev: float | None = None
            for _ in range(4):
                o = _mv(Rp, self._o)
                P = (p[0] - o[0], p[1] - o[1], p[2] - o[2])
                pans = self._pan(P)
                if pans is None:
                    ok = False
                    break
                q1 = pans[branch]
                if q1_prev is not None and abs(q1 - q1_prev) < 1e-12:
                    break  # Rp is the projection for this pan angle
                q1_prev = q1
                n = self._pitch_axis(q1)
                an = _dot(a, n)
                branch_swing = math.asin(min(1.0, abs(an)))
                if abs(an) < 1e-12:  # already in the plane: nothing to project
                    Rp = R
                    break
                ap = (a[0] - an * n[0], a[1] - an * n[1], a[2] - an * n[2])
                norm = math.sqrt(_dot(ap, ap))
                if norm < 1e-9:
                    ok = False
                    reach_msg = "approach axis along the pitch axis: no in-plane approach"
                    break
                ap = (ap[0] / norm, ap[1] / norm, ap[2] / norm)
                Rp = _mm(_rot_onto(a, ap), R)
            if not ok:
                continue
            if not partial_pose and branch_swing > self.config.rotation_tolerance:
                reach_msg = f"full pose: the approach axis is {branch_swing:.3f} rad out of the arm's plane"
                continue
            o = _mv(Rp, self._o)
            P = (p[0] - o[0], p[1] - o[1], p[2] - o[2])
            R0z = _mm(self._R0, _rz(q1))
            RF1 = _mm(R0z, self._R1)
            tF1 = _mv(R0z, self._t1)
            tF1 = (tF1[0] + self._t0[0], tF1[1] + self._t0[1], tF1[2] + self._t0[2])
            PF = _mtv(RF1, (P[0] - tF1[0], P[1] - tF1[1], P[2] - tF1[2]))
            aF = _mtv(RF1, _mv(Rp, self._approach))
            theta_c = math.atan2(self._sa * aF[1], self._sa * aF[0]) - self._rho_r
            # Rz(q5) = (RF1·Rz(θc)·R4)ᵀ · Rp · Rtᵀ: only its first column is needed
            b0 = _mv(Rp, self._rt0)
            rz = _rz(theta_c)
            m00 = _dot(_mv(RF1, _mv(rz, self._r4c0)), b0)
            m10 = _dot(_mv(RF1, _mv(rz, self._r4c1)), b0)
            q5 = math.atan2(m10, m00)
            ct, st = math.cos(theta_c), math.sin(theta_c)
            Wx = PF[0] - (ct * self._w[0] - st * self._w[1])
            Wy = PF[1] - (st * self._w[0] + ct * self._w[1])
            L2, L3 = self._L2, self._L3
            cd = (Wx * Wx + Wy * Wy - L2 * L2 - L3 * L3) / (2.0 * L2 * L3)
            if abs(cd) > 1.0 + 1e-5:  # beyond the 1e-5 slack of the URDF's rounding: out of reach
                continue
            cd = min(1.0, max(-1.0, cd))
            for sgn in (1.0, -1.0):
                dl = sgn * math.acos(cd)
                A = math.atan2(Wy, Wx) - math.atan2(L3 * math.sin(dl), L2 + L3 * math.cos(dl))
                q2 = A - self._d2
                q3 = A + dl - q2 - self._g2 - self._d3
                q4 = theta_c - (q2 + self._g2 + q3) - self._g3
                sols.append((_wrap(q1), _wrap(q2), _wrap(q3), _wrap(q4), _wrap(q5)))
                swings.append(branch_swing)
        return sols, swings, reach_msg

    def _select(
        self, sols: list[tuple[float, ...]], swings: list[float], seed: tuple[float, ...], reach_msg: str
    ) -> AnalyticSolution:
        best: tuple[float, ...] | None = None
        best_d = math.inf
        inside = 0
        nearest_any: tuple[float, ...] | None = None
        nearest_any_d = math.inf
        qs = [self._fit_limits(sol, seed) for sol in sols]
        inside_swings = [sw for q, sw in zip(qs, swings, strict=True) if self._inside(q)]
        # a pan branch that leaves more of the target's approach unmatched than the other is not a solution of
        # the same target: nearest-to-seed only chooses among the best-matching branches (0.1 mrad)
        cap = min(inside_swings) + 1e-4 if inside_swings else math.inf
        swing = min(inside_swings) if inside_swings else (min(swings) if swings else 0.0)
        for q, sw in zip(qs, swings, strict=True):
            d = 0.0
            for x, y in zip(q, seed, strict=True):
                d += (x - y) * (x - y)
            if self._inside(q) and sw <= cap:
                inside += 1
                if d < best_d:
                    best, best_d = q, d
            elif d < nearest_any_d:
                nearest_any, nearest_any_d = q, d
        if best is not None:
            return AnalyticSolution(best, True, inside, swing)
        if nearest_any is not None:
            clipped = tuple(min(max(x, lo), hi) for x, lo, hi in zip(nearest_any, self._lo, self._hi, strict=True))
            return AnalyticSolution(clipped, False, 0, swing, "every solution violates a joint limit")
        return AnalyticSolution(tuple(seed), False, 0, swing, reach_msg)

    def _inside(self, q: tuple[float, ...]) -> bool:
        return all(lo - 1e-9 <= x <= hi + 1e-9 for x, lo, hi in zip(q, self._lo, self._hi, strict=True))

    def _fit_limits(self, q: tuple[float, ...], seed: tuple[float, ...]) -> tuple[float, ...]:
        """Each angle (wrapped to (−π, π]) shifted by ±2π where that lands inside the limits and nearer the
        seed (only wrist_roll's range is wide enough for both)."""
        out = list(q)
        for i in range(5):
            x, s, lo, hi = q[i], seed[i], self._lo[i], self._hi[i]
            for y in (x - _TWO_PI, x + _TWO_PI):
                if lo <= y <= hi and (not lo <= out[i] <= hi or abs(y - s) < abs(out[i] - s)):
                    out[i] = y
        return tuple(out)

    # ------------------------------------------------------------------ IKSolver
    def solve(self, target: Tensor, seed: Tensor | None = None, *, partial_pose: bool = True) -> IKBatchResult:
        """``target`` (B, 4, 4) base-frame EE poses; ``seed`` (B, 5) rad (nearest branch wins)."""
        T = target.detach().to("cpu", torch.float64).reshape(-1, 4, 4).numpy()
        S = seed.detach().to("cpu", torch.float64).reshape(-1, 5).numpy() if seed is not None else None
        qs, oks = [], []
        for i in range(len(T)):
            sd = tuple(float(x) for x in S[i]) if S is not None else None
            sol = self.solve_one(_mat(T[i, :3, :3]), (float(T[i, 0, 3]), float(T[i, 1, 3]), float(T[i, 2, 3])), sd,
                                 partial_pose)  # fmt: skip
            qs.append(sol.q)
            oks.append(sol.ok)
        kin = self.kinematics
        q = torch.tensor(qs, dtype=kin.dtype, device=kin.device).reshape(-1, 5)
        from .pose_error import pose_error

        cur = kin.fk(q)
        tgt = target.to(kin.device, kin.dtype).reshape(-1, 4, 4)
        if self.tool_point != (0.0, 0.0, 0.0):
            tp = torch.tensor(self.tool_point, dtype=kin.dtype, device=kin.device)
            cur = cur.clone()
            tgt = tgt.clone()
            cur[:, :3, 3] = cur[:, :3, 3] + (cur[:, :3, :3] @ tp)
            tgt[:, :3, 3] = tgt[:, :3, 3] + (tgt[:, :3, :3] @ tp)
        _, pe, re = pose_error(tgt, cur, kin.approach_axis, partial_pose)
        cfg = self.config
        ok = torch.tensor(oks, device=kin.device) & (pe <= cfg.position_tolerance) & (re <= cfg.rotation_tolerance)
        return IKBatchResult(q=q, success=ok, position_error=pe, rotation_error=re, iteration_count=1)
