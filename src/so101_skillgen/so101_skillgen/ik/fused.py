"""Fused multi-seed IK: the whole damped Gauss-Newton loop of :class:`~.batched.BatchedIK` in one Triton kernel.

One program per target, one lane per seed, everything in registers: FK of the 5-joint chain (fixed origin
transform, then rotation about the joint's z axis), the geometric Jacobian (6×5, base frame), the pose error
(position first; partial pose frees the approach axis' swing out of the arm's plane, as
:mod:`.pose_error`), the same adaptive rotation scaling, weights in EE axes, error-scaled LM damping and soft
joint-limit cost as the torch step, the 5×5
normal equations (JᵀWJ + λ²I) Δq = JᵀW e by an unrolled Cholesky, the step clamp and the joint clip.

Differences from the torch loop: a seed stops moving once it meets the tolerances, and a target stops at the
first check (every ``check_every`` steps) that finds min(4, S) converged seeds; the self-collision cost is not
in the kernel — it returns the frame origins at the final joints and the caller rejects colliding seeds.
Needs joint and approach axes along z (true of the SO-101 URDF); :func:`fused_supported` checks a chain.

Set ``TRITON_INTERPRET=1`` before importing this module to run the kernel on the CPU (tests).
"""

# mypy: disable-error-code="no-untyped-def"
# ruff: noqa: N803, N806  (math notation as in the SPEC)

from __future__ import annotations

import os
from typing import NamedTuple

import torch
import triton
import triton.language as tl
from torch import Tensor

from ..kinematics import ArmKinematics
from .base import IKConfig

__all__ = ["FusedResult", "fused_params", "fused_solve", "fused_supported"]

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _link(r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, m, c, s):
    """Pose T·M·Rz(θ), T = (R, p) in base, M = the 12 values at pointer ``m`` (row-major 3×3, then
    translation), c/s = cos/sin θ: returns its rotation (9, row-major) and origin (3)."""
    a00, a01, a02 = tl.load(m + 0), tl.load(m + 1), tl.load(m + 2)
    a10, a11, a12 = tl.load(m + 3), tl.load(m + 4), tl.load(m + 5)
    a20, a21, a22 = tl.load(m + 6), tl.load(m + 7), tl.load(m + 8)
    tx, ty, tz = tl.load(m + 9), tl.load(m + 10), tl.load(m + 11)
    qx = px + r00 * tx + r01 * ty + r02 * tz
    qy = py + r10 * tx + r11 * ty + r12 * tz
    qz = pz + r20 * tx + r21 * ty + r22 * tz
    b00, b01 = r00 * a00 + r01 * a10 + r02 * a20, r00 * a01 + r01 * a11 + r02 * a21
    b10, b11 = r10 * a00 + r11 * a10 + r12 * a20, r10 * a01 + r11 * a11 + r12 * a21
    b20, b21 = r20 * a00 + r21 * a10 + r22 * a20, r20 * a01 + r21 * a11 + r22 * a21
    b02 = r00 * a02 + r01 * a12 + r02 * a22
    b12 = r10 * a02 + r11 * a12 + r12 * a22
    b22 = r20 * a02 + r21 * a12 + r22 * a22
    return (
        c * b00 + s * b01, c * b01 - s * b00, b02,
        c * b10 + s * b11, c * b11 - s * b10, b12,
        c * b20 + s * b21, c * b21 - s * b20, b22,
        qx, qy, qz,
    )  # fmt: skip


@triton.jit
def _atan2_pos(y, x):
    """atan2(y, x) for y ≥ 0, in [0, π]: four half-angle reductions, then a 13th-order series (float64 exact)."""
    r = tl.sqrt(x * x + y * y)
    t = y / tl.maximum(r + tl.abs(x), 1e-30)  # tan(φ/2), φ = atan2(y, |x|) ∈ [0, π/2]
    t = t / (1.0 + tl.sqrt(1.0 + t * t))  # tan(φ/4)
    t = t / (1.0 + tl.sqrt(1.0 + t * t))  # tan(φ/8)
    t = t / (1.0 + tl.sqrt(1.0 + t * t))  # tan(φ/16) ≤ 0.1
    u = t * t
    a = t * (1.0 + u * (-1.0 / 3 + u * (0.2 + u * (-1.0 / 7 + u * (1.0 / 9 + u * (-1.0 / 11 + u / 13))))))
    return tl.where(x < 0, 3.141592653589793 - 16.0 * a, 16.0 * a)


@triton.jit
def _free_dir(ax, ay, az):
    """The free rotation direction of partial pose for the approach direction (ax, ay, az) (base): world z
    minus its approach component, normalized (x for a vertical approach), as :func:`.pose_error.swing_axis`."""
    mx, my, mz = -az * ax, -az * ay, 1.0 - az * az
    n = tl.sqrt(mx * mx + my * my + mz * mz)
    ok = n > 1e-9
    inv = 1.0 / tl.maximum(n, 1e-12)
    return tl.where(ok, mx * inv, 1.0), tl.where(ok, my * inv, 0.0), tl.where(ok, mz * inv, 0.0)


@triton.jit
def _rot_error(r00, r01, r02, r10, r11, r12, r20, r21, r22, t00, t01, t02, t10, t11, t12, t20, t21, t22):  # fmt: skip
    """Rotation error (3, base) taking R to the target R*: log(R*·Rᵀ) through Shepperd's quaternion (as
    :func:`so101_skillgen.se3.rotation_error`); partial pose removes its free component in the caller."""
    m00, m01, m02 = (
        t00 * r00 + t01 * r01 + t02 * r02,
        t00 * r10 + t01 * r11 + t02 * r12,
        t00 * r20 + t01 * r21 + t02 * r22,
    )
    m10, m11, m12 = (
        t10 * r00 + t11 * r01 + t12 * r02,
        t10 * r10 + t11 * r11 + t12 * r12,
        t10 * r20 + t11 * r21 + t12 * r22,
    )
    m20, m21, m22 = (
        t20 * r00 + t21 * r01 + t22 * r02,
        t20 * r10 + t21 * r11 + t22 * r12,
        t20 * r20 + t21 * r21 + t22 * r22,
    )
    tr = m00 + m11 + m22
    d0, d1, d2, d3 = tr, 2 * m00 - tr, 2 * m11 - tr, 2 * m22 - tr
    k0 = (d0 >= d1) & (d0 >= d2) & (d0 >= d3)
    k1 = (d1 > d0) & (d1 >= d2) & (d1 >= d3)
    k2 = (d2 > d0) & (d2 > d1) & (d2 >= d3)
    # Shepperd's candidate quaternion (w, x, y, z) of the largest of (trace, m00, m11, m22), unnormalized
    qw = tl.where(k0, 1.0 + d0, tl.where(k1, m21 - m12, tl.where(k2, m02 - m20, m10 - m01)))
    qx = tl.where(k0, m21 - m12, tl.where(k1, 1.0 + d1, tl.where(k2, m01 + m10, m02 + m20)))
    qy = tl.where(k0, m02 - m20, tl.where(k1, m01 + m10, tl.where(k2, 1.0 + d2, m12 + m21)))
    qz = tl.where(k0, m10 - m01, tl.where(k1, m02 + m20, tl.where(k2, m12 + m21, 1.0 + d3)))
    sign = tl.where(qw < 0, -1.0, 1.0) / tl.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    qw, qx, qy, qz = qw * sign, qx * sign, qy * sign, qz * sign
    s = tl.sqrt(qx * qx + qy * qy + qz * qz)
    f = tl.where(s > 1e-7, 2.0 * _atan2_pos(s, qw) / tl.maximum(s, 1e-12), 2.0 / tl.maximum(qw, 1e-12))
    ex, ey, ez = qx * f, qy * f, qz * f
    return ex, ey, ez


@triton.jit
def _column(zx, zy, zz, ox, oy, oz, px, py, pz, r00, r01, r02, r10, r11, r12, r20, r21, r22,
            sp, s0, s1, s2, mx, my, mz):  # fmt: skip
    """Weighted Jacobian column √w ⊙ (z × (p − o), Rᵀ(I − m mᵀ)z) of the joint with axis z through o (base);
    the angular part in EE axes with its component along the free direction m removed (m = 0: full pose)."""
    dx, dy, dz = px - ox, py - oy, pz - oz
    zm = zx * mx + zy * my + zz * mz
    ux, uy, uz = zx - zm * mx, zy - zm * my, zz - zm * mz
    return (
        sp * (zy * dz - zz * dy), sp * (zz * dx - zx * dz), sp * (zx * dy - zy * dx),
        s0 * (r00 * ux + r10 * uy + r20 * uz), s1 * (r01 * ux + r11 * uy + r21 * uz),
        s2 * (r02 * ux + r12 * uy + r22 * uz),
    )  # fmt: skip


@triton.jit
def _load4(p, mask):
    return (
        tl.load(p, mask=mask, other=0.0),
        tl.load(p + 1, mask=mask, other=0.0),
        tl.load(p + 2, mask=mask, other=0.0),
        tl.load(p + 3, mask=mask, other=0.0),
    )


@triton.jit
def _load5(p):
    return tl.load(p), tl.load(p + 1), tl.load(p + 2), tl.load(p + 3), tl.load(p + 4)


@triton.jit
def _store3(p, x, y, z, mask):
    tl.store(p, x, mask=mask)
    tl.store(p + 1, y, mask=mask)
    tl.store(p + 2, z, mask=mask)


@triton.jit
def _dot6(a0, a1, a2, a3, a4, a5, b0, b1, b2, b3, b4, b5):
    return a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3 + a4 * b4 + a5 * b5


@triton.jit
def _soft_limit(q, lo, up, MARGIN):
    """(residual pushing q inside [lo + margin, up − margin] (rad), 1.0 where active else 0.0)."""
    below = tl.maximum(lo + MARGIN - q, 0.0)
    above = tl.maximum(q - (up - MARGIN), 0.0)
    return below - above, tl.where((below > 0) | (above > 0), 1.0, 0.0)


@triton.jit
def _cholesky_solve5(h00, h10, h11, h20, h21, h22, h30, h31, h32, h33, h40, h41, h42, h43, h44, g0, g1, g2, g3, g4):
    """x (5) with H x = g for SPD H given by its lower triangle, as :func:`~.batched.spd_solve`."""
    l00 = tl.sqrt(tl.maximum(h00, 1e-30))
    l10, l20, l30, l40 = h10 / l00, h20 / l00, h30 / l00, h40 / l00
    l11 = tl.sqrt(tl.maximum(h11 - l10 * l10, 1e-30))
    l21, l31, l41 = (h21 - l20 * l10) / l11, (h31 - l30 * l10) / l11, (h41 - l40 * l10) / l11
    l22 = tl.sqrt(tl.maximum(h22 - l20 * l20 - l21 * l21, 1e-30))
    l32, l42 = (h32 - l30 * l20 - l31 * l21) / l22, (h42 - l40 * l20 - l41 * l21) / l22
    l33 = tl.sqrt(tl.maximum(h33 - l30 * l30 - l31 * l31 - l32 * l32, 1e-30))
    l43 = (h43 - l40 * l30 - l41 * l31 - l42 * l32) / l33
    l44 = tl.sqrt(tl.maximum(h44 - l40 * l40 - l41 * l41 - l42 * l42 - l43 * l43, 1e-30))
    y0 = g0 / l00
    y1 = (g1 - l10 * y0) / l11
    y2 = (g2 - l20 * y0 - l21 * y1) / l22
    y3 = (g3 - l30 * y0 - l31 * y1 - l32 * y2) / l33
    y4 = (g4 - l40 * y0 - l41 * y1 - l42 * y2 - l43 * y3) / l44
    x4 = y4 / l44
    x3 = (y3 - l43 * x4) / l33
    x2 = (y2 - l32 * x3 - l42 * x4) / l22
    x1 = (y1 - l21 * x2 - l31 * x3 - l41 * x4) / l11
    x0 = (y0 - l10 * x1 - l20 * x2 - l30 * x3 - l40 * x4) / l00
    return x0, x1, x2, x3, x4


@triton.jit(do_not_specialize=["n_targets", "seeds", "iters"])
def _ik_kernel(q_ptr, tgt_ptr, prm_ptr, err_ptr, org_ptr, steps_ptr, n_targets, seeds, iters,
               PARTIAL: tl.constexpr, ADAPTIVE: tl.constexpr, CHECK: tl.constexpr, MIN_OK: tl.constexpr,
               TPB: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    """Each program iterates ``TPB`` targets (B, 4, 4) × ``seeds`` rows of q (B·S, 5) in place, lanes
    (TPB, BLOCK); writes the position / rotation error (m, rad) at the final q to err (B·S, 2) and the steps
    taken per target to steps (B,)."""
    tgt = tl.program_id(0) * TPB + tl.arange(0, TPB)[:, None]  # (TPB, 1) target index
    tvalid = tgt < n_targets
    valid = tvalid & (tl.arange(0, BLOCK)[None, :] < seeds)  # (TPB, BLOCK) lanes
    row = tgt * seeds + tl.arange(0, BLOCK)[None, :]
    q0 = tl.load(q_ptr + row * 5 + 0, mask=valid, other=0.0)
    q1 = tl.load(q_ptr + row * 5 + 1, mask=valid, other=0.0)
    q2 = tl.load(q_ptr + row * 5 + 2, mask=valid, other=0.0)
    q3 = tl.load(q_ptr + row * 5 + 3, mask=valid, other=0.0)
    q4 = tl.load(q_ptr + row * 5 + 4, mask=valid, other=0.0)
    tg = tgt_ptr + tgt * 16
    t00, t01, t02, tpx = _load4(tg, tvalid)
    t10, t11, t12, tpy = _load4(tg + 4, tvalid)
    t20, t21, t22, tpz = _load4(tg + 8, tvalid)
    lo0, lo1, lo2, lo3, lo4 = _load5(prm_ptr + 72)
    up0, up1, up2, up3, up4 = _load5(prm_ptr + 77)
    # settings as tensors of the data's dtype (float arguments and constexprs would be rounded to float32)
    W_P, W_R0, W_R1, W_R2 = tl.load(prm_ptr + 82), tl.load(prm_ptr + 83), tl.load(prm_ptr + 84), tl.load(prm_ptr + 85)
    THR, SMIN, LAM2, MAX_STEP = (
        tl.load(prm_ptr + 86),
        tl.load(prm_ptr + 87),
        tl.load(prm_ptr + 88),
        tl.load(prm_ptr + 89),
    )
    WL2, MARGIN, TOL_P, TOL_R = (
        tl.load(prm_ptr + 90),
        tl.load(prm_ptr + 91),
        tl.load(prm_ptr + 92),
        tl.load(prm_ptr + 93),
    )
    one = q0 * 0.0 + 1.0
    zero = q0 * 0.0
    pe = zero
    re = zero
    stopped = tvalid == 0  # (TPB, 1)
    steps = (tgt * 0).to(tl.int32)
    it = iters * 0
    go = it <= iters
    while go:
        # ---- FK: joint axes z_i and origins o_i, then the EE pose (R, p)
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
            one, zero, zero, zero, one, zero, zero, zero, one, zero, zero, zero, prm_ptr, tl.cos(q0), tl.sin(q0)
        )
        z0x, z0y, z0z, o0x, o0y, o0z = r02, r12, r22, px, py, pz
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
            r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 12, tl.cos(q1), tl.sin(q1)
        )
        z1x, z1y, z1z, o1x, o1y, o1z = r02, r12, r22, px, py, pz
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
            r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 24, tl.cos(q2), tl.sin(q2)
        )
        z2x, z2y, z2z, o2x, o2y, o2z = r02, r12, r22, px, py, pz
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
            r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 36, tl.cos(q3), tl.sin(q3)
        )
        z3x, z3y, z3z, o3x, o3y, o3z = r02, r12, r22, px, py, pz
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
            r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 48, tl.cos(q4), tl.sin(q4)
        )
        z4x, z4y, z4z, o4x, o4y, o4z = r02, r12, r22, px, py, pz
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
            r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 60, 1.0, 0.0
        )
        # ---- pose error (base), adaptive rotation scaling, √W in EE axes
        epx, epy, epz = tpx - px, tpy - py, tpz - pz
        erx, ery, erz = _rot_error(r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                   t00, t01, t02, t10, t11, t12, t20, t21, t22)  # fmt: skip
        if PARTIAL:  # free the approach axis' swing out of the arm's plane (.pose_error)
            mx, my, mz = _free_dir(r02, r12, r22)
            dm = erx * mx + ery * my + erz * mz
            erx, ery, erz = erx - dm * mx, ery - dm * my, erz - dm * mz
        else:
            mx, my, mz = r02 * 0.0, r02 * 0.0, r02 * 0.0
        pe = tl.sqrt(epx * epx + epy * epy + epz * epz)
        re = tl.sqrt(erx * erx + ery * ery + erz * erz)
        sc = tl.where(pe > THR, tl.maximum(THR / tl.maximum(pe, 1e-12), SMIN), 1.0)
        sp, s0, s1, s2 = tl.sqrt(one * W_P), tl.sqrt(W_R0 * sc), tl.sqrt(W_R1 * sc), tl.sqrt(W_R2 * sc)
        e0, e1, e2 = sp * epx, sp * epy, sp * epz
        e3 = s0 * (r00 * erx + r10 * ery + r20 * erz)
        e4 = s1 * (r01 * erx + r11 * ery + r21 * erz)
        e5 = s2 * (r02 * erx + r12 * ery + r22 * erz)
        # ---- weighted normal equations
        a0, a1, a2, a3, a4, a5 = _column(z0x, z0y, z0z, o0x, o0y, o0z, px, py, pz, r00, r01, r02, r10, r11, r12,
                                         r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
        b0, b1, b2, b3, b4, b5 = _column(z1x, z1y, z1z, o1x, o1y, o1z, px, py, pz, r00, r01, r02, r10, r11, r12,
                                         r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
        c0, c1, c2, c3, c4, c5 = _column(z2x, z2y, z2z, o2x, o2y, o2z, px, py, pz, r00, r01, r02, r10, r11, r12,
                                         r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
        d0, d1, d2, d3, d4, d5 = _column(z3x, z3y, z3z, o3x, o3y, o3z, px, py, pz, r00, r01, r02, r10, r11, r12,
                                         r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
        f0, f1, f2, f3, f4, f5 = _column(z4x, z4y, z4z, o4x, o4y, o4z, px, py, pz, r00, r01, r02, r10, r11, r12,
                                         r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
        if ADAPTIVE:
            werr = tl.sqrt(e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3 + e4 * e4 + e5 * e5)
            lam2 = LAM2 * tl.minimum(tl.maximum(werr / THR, 1e-4 * one), 1.0)
        else:
            lam2 = one * LAM2
        k0, m0 = _soft_limit(q0, lo0, up0, MARGIN)
        k1, m1 = _soft_limit(q1, lo1, up1, MARGIN)
        k2, m2 = _soft_limit(q2, lo2, up2, MARGIN)
        k3, m3 = _soft_limit(q3, lo3, up3, MARGIN)
        k4, m4 = _soft_limit(q4, lo4, up4, MARGIN)
        x0, x1, x2, x3, x4 = _cholesky_solve5(
            _dot6(a0, a1, a2, a3, a4, a5, a0, a1, a2, a3, a4, a5) + WL2 * m0 + lam2,
            _dot6(b0, b1, b2, b3, b4, b5, a0, a1, a2, a3, a4, a5),
            _dot6(b0, b1, b2, b3, b4, b5, b0, b1, b2, b3, b4, b5) + WL2 * m1 + lam2,
            _dot6(c0, c1, c2, c3, c4, c5, a0, a1, a2, a3, a4, a5),
            _dot6(c0, c1, c2, c3, c4, c5, b0, b1, b2, b3, b4, b5),
            _dot6(c0, c1, c2, c3, c4, c5, c0, c1, c2, c3, c4, c5) + WL2 * m2 + lam2,
            _dot6(d0, d1, d2, d3, d4, d5, a0, a1, a2, a3, a4, a5),
            _dot6(d0, d1, d2, d3, d4, d5, b0, b1, b2, b3, b4, b5),
            _dot6(d0, d1, d2, d3, d4, d5, c0, c1, c2, c3, c4, c5),
            _dot6(d0, d1, d2, d3, d4, d5, d0, d1, d2, d3, d4, d5) + WL2 * m3 + lam2,
            _dot6(f0, f1, f2, f3, f4, f5, a0, a1, a2, a3, a4, a5),
            _dot6(f0, f1, f2, f3, f4, f5, b0, b1, b2, b3, b4, b5),
            _dot6(f0, f1, f2, f3, f4, f5, c0, c1, c2, c3, c4, c5),
            _dot6(f0, f1, f2, f3, f4, f5, d0, d1, d2, d3, d4, d5),
            _dot6(f0, f1, f2, f3, f4, f5, f0, f1, f2, f3, f4, f5) + WL2 * m4 + lam2,
            _dot6(a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5) + WL2 * k0,
            _dot6(b0, b1, b2, b3, b4, b5, e0, e1, e2, e3, e4, e5) + WL2 * k1,
            _dot6(c0, c1, c2, c3, c4, c5, e0, e1, e2, e3, e4, e5) + WL2 * k2,
            _dot6(d0, d1, d2, d3, d4, d5, e0, e1, e2, e3, e4, e5) + WL2 * k3,
            _dot6(f0, f1, f2, f3, f4, f5, e0, e1, e2, e3, e4, e5) + WL2 * k4,
        )
        big = tl.maximum(tl.maximum(tl.maximum(tl.abs(x0), tl.abs(x1)), tl.maximum(tl.abs(x2), tl.abs(x3))), tl.abs(x4))
        step = tl.minimum(MAX_STEP / tl.maximum(big, 1e-12), 1.0)
        # ---- convergence: a seed within tolerance stops; the target stops at a check that finds one
        ok = valid & (pe <= TOL_P) & (re <= TOL_R)
        open_ = valid & ((pe > TOL_P) | (re > TOL_R))
        n_ok = tl.sum(ok.to(tl.int32), axis=1)[:, None]
        n_open = tl.sum(open_.to(tl.int32), axis=1)[:, None]
        stopped = stopped | (it >= iters) | (n_open == 0) | ((it % CHECK == 0) & (it > 0) & (n_ok >= MIN_OK))
        move = open_ & (stopped == 0)
        steps += (stopped == 0).to(tl.int32)
        q0 = tl.where(move, tl.minimum(tl.maximum(q0 + step * x0, lo0), up0), q0)
        q1 = tl.where(move, tl.minimum(tl.maximum(q1 + step * x1, lo1), up1), q1)
        q2 = tl.where(move, tl.minimum(tl.maximum(q2 + step * x2, lo2), up2), q2)
        q3 = tl.where(move, tl.minimum(tl.maximum(q3 + step * x3, lo3), up3), q3)
        q4 = tl.where(move, tl.minimum(tl.maximum(q4 + step * x4, lo4), up4), q4)
        go = tl.sum((stopped == 0).to(tl.int32)) > 0
        it += 1
    tl.store(q_ptr + row * 5 + 0, q0, mask=valid)
    tl.store(q_ptr + row * 5 + 1, q1, mask=valid)
    tl.store(q_ptr + row * 5 + 2, q2, mask=valid)
    tl.store(q_ptr + row * 5 + 3, q3, mask=valid)
    tl.store(q_ptr + row * 5 + 4, q4, mask=valid)
    tl.store(err_ptr + row * 2 + 0, pe, mask=valid)
    tl.store(err_ptr + row * 2 + 1, re, mask=valid)
    tl.store(steps_ptr + tgt, steps, mask=tvalid)
    # frame origins at the final q, joints then EE (B·S, 6, 3): the sphere centres of the collision check
    org = org_ptr + row * 18
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
        one, zero, zero, zero, one, zero, zero, zero, one, zero, zero, zero, prm_ptr, tl.cos(q0), tl.sin(q0)
    )
    _store3(org, px, py, pz, valid)
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 12, tl.cos(q1), tl.sin(q1)
    )
    _store3(org + 3, px, py, pz, valid)
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 24, tl.cos(q2), tl.sin(q2)
    )
    _store3(org + 6, px, py, pz, valid)
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 36, tl.cos(q3), tl.sin(q3)
    )
    _store3(org + 9, px, py, pz, valid)
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 48, tl.cos(q4), tl.sin(q4)
    )
    _store3(org + 12, px, py, pz, valid)
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = _link(
        r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 60, 1.0, 0.0
    )
    _store3(org + 15, px, py, pz, valid)


def fused_supported(kinematics: ArmKinematics) -> bool:
    """Whether the kernel's chain model fits: 5 joints, every joint axis and the approach axis along z."""
    z = torch.tensor([0.0, 0.0, 1.0], dtype=kinematics.dtype, device=kinematics.device)
    return (
        kinematics.dof == 5
        and bool(torch.allclose(kinematics.axes, z.expand(5, 3), atol=1e-9))
        and bool(torch.allclose(kinematics.approach_axis, z, atol=1e-9))
    )


def fused_params(kinematics: ArmKinematics, config: IKConfig) -> Tensor:
    """(94,) kernel constants, kinematics' device and dtype: per joint origin rotation (9, row-major) and
    translation (3), the same for the EE tail, lower (5) and upper (5) limits (rad), then the settings."""
    T = torch.cat([kinematics.origins, kinematics.tail[None]])[:, :3, :]  # (6, 3, 4)
    per = torch.cat([T[:, :, :3].reshape(6, 9), T[:, :, 3]], dim=-1)  # (6, 12)
    bc, w = config.batched, config.weights
    settings = [w[0], w[3], w[4], w[5], config.rotation_scaling_threshold, config.rotation_scaling_min,
                bc.damping**2, bc.max_step, bc.joint_limit_weight**2, bc.joint_limit_margin,
                config.position_tolerance, config.rotation_tolerance]  # fmt: skip
    extra = torch.tensor(settings, dtype=kinematics.dtype, device=kinematics.device)
    return torch.cat([per.reshape(-1), kinematics.lower, kinematics.upper, extra]).contiguous()


class FusedResult(NamedTuple):
    """Per seed at the returned joints: ``q`` (B, S, 5) rad, ``position_error`` (B, S) m, ``rotation_error``
    (B, S) rad, ``origins`` (B, S, 6, 3) m of the joint frames then the EE frame (base); ``steps`` (B,)."""

    q: Tensor
    position_error: Tensor
    rotation_error: Tensor
    origins: Tensor
    steps: Tensor


def fused_solve(q: Tensor, target: Tensor, params: Tensor, config: IKConfig, partial_pose: bool) -> FusedResult:
    """Iterate seeds ``q`` (B, S, 5) rad against ``target`` (B, 4, 4) base-frame EE poses (same device and
    dtype as ``params``, :func:`fused_params` of the same ``config``). A target stops at the first check
    with ``min(4, S)`` converged seeds (spares for the collision check the kernel does not do)."""
    bc = config.batched
    b, s, _ = q.shape
    q = q.contiguous().clone()
    err = torch.empty(b, s, 2, dtype=q.dtype, device=q.device)
    org = torch.empty(b, s, 6, 3, dtype=q.dtype, device=q.device)
    steps = torch.zeros(b, dtype=torch.int32, device=q.device)
    if b > 0:
        block = triton.next_power_of_2(s)
        # GPU: fill a warp (a target stops with its own seeds); interpreter: one program, numpy-wide ops
        tpb = triton.next_power_of_2(b) if _INTERPRET else max(1, 32 // block)
        _ik_kernel[(triton.cdiv(b, tpb),)](
            q, target.contiguous(), params, err, org, steps, b, s, bc.iterations,
            PARTIAL=partial_pose, ADAPTIVE=config.adaptive_damping, CHECK=bc.check_every, MIN_OK=min(4, s),
            TPB=tpb, BLOCK=block, num_warps=max(1, min(4, tpb * block // 32)),
        )  # fmt: skip
    return FusedResult(q, err[..., 0], err[..., 1], org, steps)
