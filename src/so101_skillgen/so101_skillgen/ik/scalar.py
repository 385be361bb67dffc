"""The partial-pose DLS iteration of :mod:`.jacobian` in plain Python floats, for one target on the CPU.

For a 5-joint chain every numpy call costs more than the arithmetic it does (≈ 1 µs each, ~60 per
iteration), so the same math written out on floats runs about twice as fast. Same formula and conventions
as :class:`~so101_skillgen.ik.jacobian.JacobianIK` (tested against it); rotation matrices are row-major
9-tuples, vectors 3-tuples, the Jacobian a list of 5 columns (vx, vy, vz, ωx, ωy, ωz).
"""

# ruff: noqa: N803, N806  (math notation: R rotation, J Jacobian)

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["ScalarChain", "scalar_attempt"]

Mat = tuple[float, float, float, float, float, float, float, float, float]
Vec = tuple[float, float, float]


def _mat(m: npt.NDArray[np.float64]) -> Mat:
    a = [float(x) for x in np.asarray(m, dtype=np.float64).reshape(9)]
    return (a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8])


def _vec(v: npt.NDArray[np.float64]) -> Vec:
    a = [float(x) for x in np.asarray(v, dtype=np.float64).reshape(3)]
    return (a[0], a[1], a[2])


def _perpendicular(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    other = np.eye(3)[0] if abs(float(a[0])) < 0.9 else np.eye(3)[1]
    v = np.cross(a, other)
    return np.asarray(v / np.linalg.norm(v), dtype=np.float64)


def _mul(A: Mat, B: Mat) -> Mat:
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = A
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = B
    return (
        a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7, a0 * b2 + a1 * b5 + a2 * b8,
        a3 * b0 + a4 * b3 + a5 * b6, a3 * b1 + a4 * b4 + a5 * b7, a3 * b2 + a4 * b5 + a5 * b8,
        a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7, a6 * b2 + a7 * b5 + a8 * b8,
    )  # fmt: skip


def _mv(A: Mat, v: Vec) -> Vec:
    x, y, z = v
    return (A[0] * x + A[1] * y + A[2] * z, A[3] * x + A[4] * y + A[5] * z, A[6] * x + A[7] * y + A[8] * z)


def _mtv(A: Mat, v: Vec) -> Vec:
    x, y, z = v
    return (A[0] * x + A[3] * y + A[6] * z, A[1] * x + A[4] * y + A[7] * z, A[2] * x + A[5] * y + A[8] * z)


@dataclass(frozen=True)
class ScalarChain:
    """Chain constants as floats: per joint the origin rotation/translation and unit axis; the EE tail."""

    origin_rot: tuple[Mat, ...]
    origin_p: tuple[Vec, ...]
    axes: tuple[Vec, ...]
    tail_rot: Mat
    tail_p: Vec
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    approach: Vec
    perp: Vec  # a unit vector ⟂ approach (EE frame): the rotation axis for an anti-parallel target

    @classmethod
    def of(
        cls,
        origins: npt.NDArray[np.float64],
        axes: npt.NDArray[np.float64],
        tail: npt.NDArray[np.float64],
        lower: npt.NDArray[np.float64],
        upper: npt.NDArray[np.float64],
        approach: npt.NDArray[np.float64],
    ) -> ScalarChain:
        return cls(
            tuple(_mat(o[:3, :3]) for o in origins),
            tuple(_vec(o[:3, 3]) for o in origins),
            tuple(_vec(a) for a in axes),
            _mat(tail[:3, :3]),
            _vec(tail[:3, 3]),
            tuple(float(x) for x in lower),
            tuple(float(x) for x in upper),
            _vec(approach),
            _vec(_perpendicular(approach)),
        )

    def fk_jacobian(self, q: Sequence[float]) -> tuple[Mat, Vec, list[list[float]]]:
        """EE rotation, position and the Jacobian as 5 columns of 6 (linear first), base frame."""
        R: Mat = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        px = py = pz = 0.0
        zs: list[Vec] = []
        os: list[Vec] = []
        for i in range(len(q)):
            ox, oy, oz = _mv(R, self.origin_p[i])
            px, py, pz = px + ox, py + oy, pz + oz
            A = _mul(R, self.origin_rot[i])
            x, y, z = self.axes[i]
            c, s = math.cos(q[i]), math.sin(q[i])
            t = 1.0 - c
            rot: Mat = (
                c + t * x * x, t * x * y - s * z, t * x * z + s * y,
                t * x * y + s * z, c + t * y * y, t * y * z - s * x,
                t * x * z - s * y, t * y * z + s * x, c + t * z * z,
            )  # fmt: skip
            R = _mul(A, rot)
            zs.append(_mv(A, self.axes[i]))  # the rotation about the axis leaves it unchanged
            os.append((px, py, pz))
        tx, ty, tz = _mv(R, self.tail_p)
        ex, ey, ez = px + tx, py + ty, pz + tz
        cols: list[list[float]] = []
        for (zx, zy, zz), (ox, oy, oz) in zip(zs, os, strict=True):
            dx, dy, dz = ex - ox, ey - oy, ez - oz
            cols.append([zy * dz - zz * dy, zz * dx - zx * dz, zx * dy - zy * dx, zx, zy, zz])
        return _mul(R, self.tail_rot), (ex, ey, ez), cols


def _solve_spd(A: list[list[float]], b: list[float]) -> list[float]:
    """x with A x = b, A symmetric positive definite (Cholesky, in place on copies)."""
    n = len(b)
    L = [[0.0] * n for _ in range(n)]
    for j in range(n):
        Lj = L[j]
        d = A[j][j]
        for k in range(j):
            d -= Lj[k] * Lj[k]
        ljj = math.sqrt(d if d > 1e-300 else 1e-300)
        Lj[j] = ljj
        for i in range(j + 1, n):
            Li = L[i]
            v = A[i][j]
            for k in range(j):
                v -= Li[k] * Lj[k]
            Li[j] = v / ljj
    y = [0.0] * n
    for i in range(n):
        Li = L[i]
        v = b[i]
        for k in range(i):
            v -= Li[k] * y[k]
        y[i] = v / Li[i]
    x = [0.0] * n
    for i in range(n - 1, -1, -1):
        v = y[i]
        for k in range(i + 1, n):
            v -= L[k][i] * x[k]
        x[i] = v / L[i][i]
    return x


def scalar_attempt(
    chain: ScalarChain,
    Rt: Mat,
    pt: Vec,
    q0: Sequence[float],
    *,
    weights: Sequence[float],
    damping: float,
    max_step: float,
    threshold: float,
    min_scale: float,
    adaptive_damping: bool,
    tol_p: float,
    tol_r: float,
    iterations: int,
) -> tuple[list[float], float, float, int]:
    """Partial-pose DLS from ``q0``: ``(q, position_error m, approach-axis error rad, iterations)``.

    Δq = Jᵀ(JJᵀ + λ²I)⁻¹·W·e is computed as (JᵀJ + λ²I)⁻¹·Jᵀ·W·e (the same vector, a 5×5 solve).
    """
    lo, hi = chain.lower, chain.upper
    n = len(lo)
    q = [min(max(float(v), lo[i]), hi[i]) for i, v in enumerate(q0)]
    ax = chain.approach
    a_tgt = _mv(Rt, ax)
    w0, w1, w2, w3, w4, w5 = (float(x) for x in weights)
    it = 0
    while True:
        R, p, cols = chain.fk_jacobian(q)
        e0, e1, e2 = pt[0] - p[0], pt[1] - p[1], pt[2] - p[2]
        ep = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        a0, a1, a2 = _mv(R, ax)
        c0 = a1 * a_tgt[2] - a2 * a_tgt[1]
        c1 = a2 * a_tgt[0] - a0 * a_tgt[2]
        c2 = a0 * a_tgt[1] - a1 * a_tgt[0]
        sn = math.sqrt(c0 * c0 + c1 * c1 + c2 * c2)
        dot = a0 * a_tgt[0] + a1 * a_tgt[1] + a2 * a_tgt[2]
        er = math.atan2(sn, dot)
        if (ep <= tol_p and er <= tol_r) or it >= iterations:
            return q, ep, er, it
        it += 1
        if sn > 1e-9:
            k = er / sn
            r0, r1, r2 = c0 * k, c1 * k, c2 * k
        elif dot < 0:  # anti-parallel: any axis ⟂ the approach will do
            u0, u1, u2 = _mv(R, chain.perp)
            r0, r1, r2 = u0 * er, u1 * er, u2 * er
        else:
            r0 = r1 = r2 = 0.0
        scale = max(threshold / ep, min_scale) if ep > threshold else 1.0
        l0, l1, l2 = _mtv(R, (r0, r1, r2))
        r0w, r1w, r2w = _mv(R, (l0 * w3 * scale, l1 * w4 * scale, l2 * w5 * scale))
        we = (w0 * e0, w1 * e1, w2 * e2, r0w, r1w, r2w)
        lam2 = damping * damping
        if adaptive_damping:
            werr = math.sqrt(we[0] * e0 + we[1] * e1 + we[2] * e2 + r0w * r0 + r1w * r1 + r2w * r2) / threshold
            lam2 *= min(max(werr, 1e-4), 1.0)
        # project the angular rows onto the plane ⟂ the current approach direction
        for col in cols:
            d = a0 * col[3] + a1 * col[4] + a2 * col[5]
            col[3] -= d * a0
            col[4] -= d * a1
            col[5] -= d * a2
        JtJ = [[0.0] * n for _ in range(n)]
        rhs = [0.0] * n
        for i in range(n):
            x0, x1, x2, x3, x4, x5 = cols[i]
            rhs[i] = x0 * we[0] + x1 * we[1] + x2 * we[2] + x3 * we[3] + x4 * we[4] + x5 * we[5]
            row = JtJ[i]
            for j in range(i, n):
                y0, y1, y2, y3, y4, y5 = cols[j]
                v = x0 * y0 + x1 * y1 + x2 * y2 + x3 * y3 + x4 * y4 + x5 * y5
                row[j] = v
                JtJ[j][i] = v
            row[i] += lam2
        dq = _solve_spd(JtJ, rhs)
        big = max(abs(v) for v in dq)
        f = max_step / big if big > max_step else 1.0
        q = [min(max(q[i] + f * dq[i], lo[i]), hi[i]) for i in range(n)]
