"""Fused multi-seed IK: the whole of :meth:`~.batched.BatchedIK.solve` on CUDA in one Triton kernel launch.

One program per target, one lane per seed, everything in registers: FK of the 5-joint chain (fixed origin
transform, then rotation about the joint's z axis), the geometric Jacobian (6×5, base frame), the pose error
(position first; partial pose frees the approach axis' swing out of the arm's plane, as
:mod:`.pose_error`), the same adaptive rotation scaling, weights in EE axes, error-scaled LM damping and soft
joint-limit cost as the torch step, the 5×5 normal equations (JᵀWJ + λ²I) Δq = JᵀW e by an unrolled
Cholesky, the step clamp and the joint clip; then the sphere self-collision check of converged seeds and the
pick of the best seed per target (as the torch path scores them). The caller's seed / first start are
read in the kernel, so a solve is one launch and no host synchronisation.

Differences from the torch loop: a seed stops moving once it meets the tolerances; a target stops as soon
as one converged seed is free of self-collision (with a tie-break seed: once the seed's own start is, or
min(4, S) others); the self-collision cost is not in the step (colliding seeds are rejected, not pushed
apart). Computes in the dtype of :func:`fused_params` (float32: tolerances tightened by
:data:`F32_TOLERANCE_MARGIN`). Needs joint and approach axes along z and two spheres per link (true of the
SO-101 URDF and :class:`~.spheres.SphereModel`); :func:`fused_supported` checks.

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
from .spheres import SphereModel

__all__ = ["F32_TOLERANCE_MARGIN", "FusedResult", "fused_params", "fused_solve", "fused_supported"]

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
def _load5m(p, mask, CDT: tl.constexpr):
    """Five values from ``p`` where ``mask`` (0 elsewhere), as ``CDT``."""
    return (
        tl.load(p, mask=mask, other=0.0).to(CDT),
        tl.load(p + 1, mask=mask, other=0.0).to(CDT),
        tl.load(p + 2, mask=mask, other=0.0).to(CDT),
        tl.load(p + 3, mask=mask, other=0.0).to(CDT),
        tl.load(p + 4, mask=mask, other=0.0).to(CDT),
    )


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


@triton.jit
def _centres(ax, ay, az, bx, by, bz, F0, F1):
    """The two sphere centres at fractions F0, F1 of the link segment a → b (base, m)."""
    dx, dy, dz = bx - ax, by - ay, bz - az
    return ax + F0 * dx, ay + F0 * dy, az + F0 * dz, ax + F1 * dx, ay + F1 * dy, az + F1 * dz


@triton.jit
def _d2(ax, ay, az, bx, by, bz):
    return (ax - bx) * (ax - bx) + (ay - by) * (ay - by) + (az - bz) * (az - bz)


@triton.jit
def _gap2(a, b):
    """Smallest squared distance (m²) between the two spheres of one link and the two of another, each
    given as :func:`_centres` returns them."""
    d = tl.minimum(_d2(a[0], a[1], a[2], b[0], b[1], b[2]), _d2(a[0], a[1], a[2], b[3], b[4], b[5]))
    return tl.minimum(d, tl.minimum(_d2(a[3], a[4], a[5], b[0], b[1], b[2]), _d2(a[3], a[4], a[5], b[3], b[4], b[5])))


@triton.jit
def _collision_free(o0x, o0y, o0z, o1x, o1y, o1z, o2x, o2y, o2z, o3x, o3y, o3z, o4x, o4y, o4z, px, py, pz,
                    F0, F1, C2):  # fmt: skip
    """Whether no two spheres on links at least two apart overlap, as :meth:`~.spheres.SphereModel.depth`:
    link 0 runs from the base origin to joint 0's origin o0, link k from o(k−1) to o(k), link 5 from o4 to
    the EE origin p; ``C2`` m² the squared contact distance (2·radius + margin − 1e-6)²."""
    zero = o0x * 0.0
    l0 = _centres(zero, zero, zero, o0x, o0y, o0z, F0, F1)
    l1 = _centres(o0x, o0y, o0z, o1x, o1y, o1z, F0, F1)
    l2 = _centres(o1x, o1y, o1z, o2x, o2y, o2z, F0, F1)
    l3 = _centres(o2x, o2y, o2z, o3x, o3y, o3z, F0, F1)
    l4 = _centres(o3x, o3y, o3z, o4x, o4y, o4z, F0, F1)
    l5 = _centres(o4x, o4y, o4z, px, py, pz, F0, F1)
    d = tl.minimum(_gap2(l0, l2), _gap2(l0, l3))
    d = tl.minimum(d, tl.minimum(_gap2(l0, l4), _gap2(l0, l5)))
    d = tl.minimum(d, tl.minimum(_gap2(l1, l3), _gap2(l1, l4)))
    d = tl.minimum(d, tl.minimum(_gap2(l1, l5), _gap2(l2, l4)))
    d = tl.minimum(d, tl.minimum(_gap2(l2, l5), _gap2(l3, l5)))
    return d >= C2


@triton.jit
def _pick(x, pick):
    """The value of each target's picked lane: (TPB, BLOCK) → (TPB,)."""
    return tl.sum(tl.where(pick, x, 0.0), axis=1)


@triton.jit(do_not_specialize=["n_targets", "seeds", "iters"])
def _ik_kernel(start_ptr, first_ptr, seed_ptr, tgt_ptr, prm_ptr, q_ptr, ok_ptr, err_ptr, steps_ptr,
               qs_ptr, errs_ptr, free_ptr, n_targets, seeds, iters,
               PARTIAL: tl.constexpr, ADAPTIVE: tl.constexpr, COLLISION: tl.constexpr, HAS_FIRST: tl.constexpr,
               HAS_SEED: tl.constexpr, PER_SEED: tl.constexpr, MIN_OK: tl.constexpr, CDT: tl.constexpr,
               TPB: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    """Each program solves ``TPB`` targets (B, 4, 4) from ``seeds`` starts (B·S, 5) each, lanes (TPB, BLOCK),
    computing in ``CDT``; lane 0 starts at first (B, 5) when ``HAS_FIRST``. Writes per target the picked
    joints q (B, 5), success ok (B,) int8, position / rotation error err (B, 2) m / rad and the steps taken
    (B,); with ``PER_SEED`` also every lane's final joints qs (B·S, 5), errors errs (B·S, 2) and whether it
    is free of self-collision (B·S,) int8 (computed only where converged: 1 elsewhere)."""
    tid = tl.program_id(0) * TPB + tl.arange(0, TPB)  # (TPB,) target index
    tvalid1 = tid < n_targets
    tgt = tid[:, None]  # (TPB, 1)
    tvalid = tgt < n_targets
    lane = tl.arange(0, BLOCK)[None, :]
    valid = tvalid & (lane < seeds)  # (TPB, BLOCK) lanes
    row = tgt * seeds + lane
    q0 = tl.load(start_ptr + row * 5 + 0, mask=valid, other=0.0).to(CDT)
    q1 = tl.load(start_ptr + row * 5 + 1, mask=valid, other=0.0).to(CDT)
    q2 = tl.load(start_ptr + row * 5 + 2, mask=valid, other=0.0).to(CDT)
    q3 = tl.load(start_ptr + row * 5 + 3, mask=valid, other=0.0).to(CDT)
    q4 = tl.load(start_ptr + row * 5 + 4, mask=valid, other=0.0).to(CDT)
    lo0, lo1, lo2, lo3, lo4 = _load5(prm_ptr + 72)
    up0, up1, up2, up3, up4 = _load5(prm_ptr + 77)
    if HAS_FIRST:  # lane 0 starts at the caller's joints, clipped to the limits
        f0, f1, f2, f3, f4 = _load5m(first_ptr + tgt * 5, tvalid, CDT)
        first = valid & (lane == 0)
        q0 = tl.where(first, tl.minimum(tl.maximum(f0, lo0), up0), q0)
        q1 = tl.where(first, tl.minimum(tl.maximum(f1, lo1), up1), q1)
        q2 = tl.where(first, tl.minimum(tl.maximum(f2, lo2), up2), q2)
        q3 = tl.where(first, tl.minimum(tl.maximum(f3, lo3), up3), q3)
        q4 = tl.where(first, tl.minimum(tl.maximum(f4, lo4), up4), q4)
    tg = tgt_ptr + tgt * 16
    t00, t01, t02, tpx = _load4(tg, tvalid)
    t10, t11, t12, tpy = _load4(tg + 4, tvalid)
    t20, t21, t22, tpz = _load4(tg + 8, tvalid)
    t00, t01, t02, tpx = t00.to(CDT), t01.to(CDT), t02.to(CDT), tpx.to(CDT)
    t10, t11, t12, tpy = t10.to(CDT), t11.to(CDT), t12.to(CDT), tpy.to(CDT)
    t20, t21, t22, tpz = t20.to(CDT), t21.to(CDT), t22.to(CDT), tpz.to(CDT)
    # settings as tensors of the compute dtype (float arguments and constexprs would be rounded to float32)
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
    F0, F1, C2 = tl.load(prm_ptr + 94), tl.load(prm_ptr + 95), tl.load(prm_ptr + 96)
    one = q0 * 0.0 + 1.0
    zero = q0 * 0.0
    pe = zero
    re = zero
    free = valid  # where converged: free of self-collision at the current q
    good = valid & (lane < 0)  # converged and free
    conv = good
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
            r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, prm_ptr + 60, one, zero
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
            mx, my, mz = zero, zero, zero
        pe = tl.sqrt(epx * epx + epy * epy + epz * epz)
        re = tl.sqrt(erx * erx + ery * ery + erz * erz)
        # ---- convergence: a converged seed stops moving; the target stops once it has a good one (below)
        conv = valid & (pe <= TOL_P) & (re <= TOL_R)
        if COLLISION:
            if tl.sum(conv.to(tl.int32)) > 0:  # uniform over the program: the check costs only once needed
                free = _collision_free(o0x, o0y, o0z, o1x, o1y, o1z, o2x, o2y, o2z, o3x, o3y, o3z,
                                       o4x, o4y, o4z, px, py, pz, F0, F1, C2)  # fmt: skip
            good = conv & free
        else:
            good = conv
        open_ = valid & (conv == 0)
        n_good = tl.sum(good.to(tl.int32), axis=1)[:, None]
        n_open = tl.sum(open_.to(tl.int32), axis=1)[:, None]
        if HAS_SEED:  # the seed's own start (lane 0) or MIN_OK others: the closest one is then among them
            first_good = tl.sum((good & (lane == 0)).to(tl.int32), axis=1)[:, None]
            done = (first_good > 0) | (n_good >= MIN_OK)
        else:
            done = n_good > 0
        stopped = stopped | (it >= iters) | (n_open == 0) | done
        move = open_ & (stopped == 0)
        go = tl.sum(move.to(tl.int32)) > 0
        steps += (stopped == 0).to(tl.int32)
        it += 1
        if go:  # ---- weighted normal equations and the damped step of the lanes still moving
            sc = tl.where(pe > THR, tl.maximum(THR / tl.maximum(pe, 1e-12), SMIN), 1.0)
            sp, s0, s1, s2 = tl.sqrt(one * W_P), tl.sqrt(W_R0 * sc), tl.sqrt(W_R1 * sc), tl.sqrt(W_R2 * sc)
            e0, e1, e2 = sp * epx, sp * epy, sp * epz
            e3 = s0 * (r00 * erx + r10 * ery + r20 * erz)
            e4 = s1 * (r01 * erx + r11 * ery + r21 * erz)
            e5 = s2 * (r02 * erx + r12 * ery + r22 * erz)
            a0, a1, a2, a3, a4, a5 = _column(z0x, z0y, z0z, o0x, o0y, o0z, px, py, pz, r00, r01, r02, r10, r11,
                                             r12, r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
            b0, b1, b2, b3, b4, b5 = _column(z1x, z1y, z1z, o1x, o1y, o1z, px, py, pz, r00, r01, r02, r10, r11,
                                             r12, r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
            c0, c1, c2, c3, c4, c5 = _column(z2x, z2y, z2z, o2x, o2y, o2z, px, py, pz, r00, r01, r02, r10, r11,
                                             r12, r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
            d0, d1, d2, d3, d4, d5 = _column(z3x, z3y, z3z, o3x, o3y, o3z, px, py, pz, r00, r01, r02, r10, r11,
                                             r12, r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
            g0, g1, g2, g3, g4, g5 = _column(z4x, z4y, z4z, o4x, o4y, o4z, px, py, pz, r00, r01, r02, r10, r11,
                                             r12, r20, r21, r22, sp, s0, s1, s2, mx, my, mz)  # fmt: skip
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
                _dot6(g0, g1, g2, g3, g4, g5, a0, a1, a2, a3, a4, a5),
                _dot6(g0, g1, g2, g3, g4, g5, b0, b1, b2, b3, b4, b5),
                _dot6(g0, g1, g2, g3, g4, g5, c0, c1, c2, c3, c4, c5),
                _dot6(g0, g1, g2, g3, g4, g5, d0, d1, d2, d3, d4, d5),
                _dot6(g0, g1, g2, g3, g4, g5, g0, g1, g2, g3, g4, g5) + WL2 * m4 + lam2,
                _dot6(a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5) + WL2 * k0,
                _dot6(b0, b1, b2, b3, b4, b5, e0, e1, e2, e3, e4, e5) + WL2 * k1,
                _dot6(c0, c1, c2, c3, c4, c5, e0, e1, e2, e3, e4, e5) + WL2 * k2,
                _dot6(d0, d1, d2, d3, d4, d5, e0, e1, e2, e3, e4, e5) + WL2 * k3,
                _dot6(g0, g1, g2, g3, g4, g5, e0, e1, e2, e3, e4, e5) + WL2 * k4,
            )
            big = tl.maximum(
                tl.maximum(tl.maximum(tl.abs(x0), tl.abs(x1)), tl.maximum(tl.abs(x2), tl.abs(x3))), tl.abs(x4)
            )
            step = tl.minimum(MAX_STEP / tl.maximum(big, 1e-12), 1.0)
            q0 = tl.where(move, tl.minimum(tl.maximum(q0 + step * x0, lo0), up0), q0)
            q1 = tl.where(move, tl.minimum(tl.maximum(q1 + step * x1, lo1), up1), q1)
            q2 = tl.where(move, tl.minimum(tl.maximum(q2 + step * x2, lo2), up2), q2)
            q3 = tl.where(move, tl.minimum(tl.maximum(q3 + step * x3, lo3), up3), q3)
            q4 = tl.where(move, tl.minimum(tl.maximum(q4 + step * x4, lo4), up4), q4)
    # ---- the loop ends on an iteration that moved nothing: pe, re, free (where converged) are at the final q.
    # Pick per target: among the good lanes the closest to the seed (or the smallest error), else the smallest
    # error, as BatchedIK.solve's torch path.
    err = pe + 0.05 * re
    if HAS_SEED:
        s0_, s1_, s2_, s3_, s4_ = _load5m(seed_ptr + tgt * 5, tvalid, CDT)
        dq0, dq1, dq2, dq3, dq4 = q0 - s0_, q1 - s1_, q2 - s2_, q3 - s3_, q4 - s4_
        key = tl.where(good, tl.sqrt(dq0 * dq0 + dq1 * dq1 + dq2 * dq2 + dq3 * dq3 + dq4 * dq4), 1e3 + err)
    else:
        key = tl.where(good, err, 1e3 + err)
    key = tl.where(valid, key, 1e30)
    kmin = tl.min(key, axis=1)[:, None]
    best = tl.min(tl.where(valid & (key == kmin), lane, BLOCK), axis=1)[:, None]
    pick = lane == best
    tl.store(q_ptr + tid * 5 + 0, _pick(q0, pick), mask=tvalid1)
    tl.store(q_ptr + tid * 5 + 1, _pick(q1, pick), mask=tvalid1)
    tl.store(q_ptr + tid * 5 + 2, _pick(q2, pick), mask=tvalid1)
    tl.store(q_ptr + tid * 5 + 3, _pick(q3, pick), mask=tvalid1)
    tl.store(q_ptr + tid * 5 + 4, _pick(q4, pick), mask=tvalid1)
    tl.store(err_ptr + tid * 2 + 0, _pick(pe, pick), mask=tvalid1)
    tl.store(err_ptr + tid * 2 + 1, _pick(re, pick), mask=tvalid1)
    tl.store(ok_ptr + tid, tl.sum((pick & good).to(tl.int32), axis=1).to(tl.int8), mask=tvalid1)
    tl.store(steps_ptr + tid, tl.max(steps, axis=1), mask=tvalid1)
    if PER_SEED:
        tl.store(qs_ptr + row * 5 + 0, q0, mask=valid)
        tl.store(qs_ptr + row * 5 + 1, q1, mask=valid)
        tl.store(qs_ptr + row * 5 + 2, q2, mask=valid)
        tl.store(qs_ptr + row * 5 + 3, q3, mask=valid)
        tl.store(qs_ptr + row * 5 + 4, q4, mask=valid)
        tl.store(errs_ptr + row * 2 + 0, pe, mask=valid)
        tl.store(errs_ptr + row * 2 + 1, re, mask=valid)
        tl.store(free_ptr + row, (free | (conv == 0)).to(tl.int8), mask=valid)


def fused_supported(kinematics: ArmKinematics, spheres: SphereModel | None = None) -> bool:
    """Whether the kernel's models fit: 5 joints, every joint axis and the approach axis along z, and (when
    given) self-collision spheres two per link."""
    z = torch.tensor([0.0, 0.0, 1.0], dtype=kinematics.dtype, device=kinematics.device)
    return (
        kinematics.dof == 5
        and bool(torch.allclose(kinematics.axes, z.expand(5, 3), atol=1e-9))
        and bool(torch.allclose(kinematics.approach_axis, z, atol=1e-9))
        and (spheres is None or (spheres.links == 6 and len(spheres.fractions) == 2))
    )


F32_TOLERANCE_MARGIN = (2e-6, 2e-5)
"""(m, rad) the float32 kernel's stop / success tolerances are tightened by: a bound on float32 rounding
of the chain's FK and rotation error (~1e-7 m, ~1e-6 rad), so a success it reports holds in float64."""


def fused_params(
    kinematics: ArmKinematics, config: IKConfig, spheres: SphereModel | None = None, dtype: torch.dtype | None = None
) -> Tensor:
    """(97,) kernel constants on the kinematics' device in ``dtype`` (the compute dtype; default the
    kinematics'): per joint origin rotation (9, row-major) and translation (3), the same for the EE tail,
    lower (5) and upper (5) limits (rad), the settings, then the sphere fractions (2) and the squared
    contact distance (m²) of the self-collision check (``spheres`` default: :class:`SphereModel`)."""
    dt = kinematics.dtype if dtype is None else dtype
    sph = spheres if spheres is not None else SphereModel(kinematics)
    T = torch.cat([kinematics.origins, kinematics.tail[None]])[:, :3, :]  # (6, 3, 4)
    per = torch.cat([T[:, :, :3].reshape(6, 9), T[:, :, 3]], dim=-1)  # (6, 12)
    bc, w = config.batched, config.weights
    dp, dr = F32_TOLERANCE_MARGIN if dt == torch.float32 else (0.0, 0.0)
    contact = 2 * sph.radius + bc.collision_margin - 1e-6
    settings = [w[0], w[3], w[4], w[5], config.rotation_scaling_threshold, config.rotation_scaling_min,
                bc.damping**2, bc.max_step, bc.joint_limit_weight**2, bc.joint_limit_margin,
                config.position_tolerance - dp, config.rotation_tolerance - dr,
                sph.fractions[0], sph.fractions[1], max(contact, 0.0) ** 2]  # fmt: skip
    extra = torch.tensor(settings, dtype=kinematics.dtype, device=kinematics.device)
    return torch.cat([per.reshape(-1), kinematics.lower, kinematics.upper, extra]).to(dt).contiguous()


class FusedResult(NamedTuple):
    """Per target: the picked ``q`` (B, 5) rad, ``success`` (B,) bool, ``position_error`` (B,) m,
    ``rotation_error`` (B,) rad at it, ``steps`` (B,) int32 iterations run; with ``per_seed`` every seed's
    final ``seed_q`` (B, S, 5), ``seed_position_error`` / ``seed_rotation_error`` (B, S) and ``seed_free``
    (B, S) bool (free of self-collision; checked only where converged, True elsewhere), else None."""

    q: Tensor
    success: Tensor
    position_error: Tensor
    rotation_error: Tensor
    steps: Tensor
    seed_q: Tensor | None = None
    seed_position_error: Tensor | None = None
    seed_rotation_error: Tensor | None = None
    seed_free: Tensor | None = None


def fused_solve(
    starts: Tensor,
    target: Tensor,
    params: Tensor,
    config: IKConfig,
    partial_pose: bool,
    first: Tensor | None = None,
    seed: Tensor | None = None,
    *,
    per_seed: bool = False,
) -> FusedResult:
    """Solve ``target`` (B, 4, 4) base-frame EE poses from ``starts`` (B, S, 5) rad (read only), lane 0
    replaced by ``first`` (B, 5) when given; ``seed`` (B, 5) breaks ties among the successful seeds (the
    closest wins). Inputs share a device and dtype (results come in it); ``params`` from :func:`fused_params`
    of the same ``config`` sets the compute dtype. One kernel launch, no host synchronisation.

    A seed stops once within the tolerances; a target stops once a converged seed is free of self-collision
    (with ``seed``: once lane 0 is, or ``min(4, S)`` others), or when no seed moves, or after
    ``batched.iterations``."""
    bc = config.batched
    b, s, _ = starts.shape
    dev, dt = starts.device, starts.dtype
    starts = starts.contiguous()
    q = torch.empty(b, 5, dtype=dt, device=dev)
    ok = torch.empty(b, dtype=torch.int8, device=dev)
    err = torch.empty(b, 2, dtype=dt, device=dev)
    steps = torch.empty(b, dtype=torch.int32, device=dev)
    if per_seed:
        qs = torch.empty(b, s, 5, dtype=dt, device=dev)
        errs = torch.empty(b, s, 2, dtype=dt, device=dev)
        free = torch.empty(b, s, dtype=torch.int8, device=dev)
    else:
        qs, errs, free = q, err, ok  # not written
    if b > 0:
        block = triton.next_power_of_2(s)
        # GPU: fill a warp (a target stops with its own seeds); interpreter: one program, numpy-wide ops
        tpb = triton.next_power_of_2(b) if _INTERPRET else max(1, 32 // block)
        cdt = tl.float32 if params.dtype == torch.float32 else tl.float64
        _ik_kernel[(triton.cdiv(b, tpb),)](
            starts, starts if first is None else first.contiguous(), starts if seed is None else seed.contiguous(),
            target.contiguous(), params, q, ok, err, steps, qs, errs, free, b, s, bc.iterations,
            PARTIAL=partial_pose, ADAPTIVE=config.adaptive_damping, COLLISION=bc.self_collision,
            HAS_FIRST=first is not None, HAS_SEED=seed is not None, PER_SEED=per_seed, MIN_OK=min(4, s),
            CDT=cdt, TPB=tpb, BLOCK=block, num_warps=max(1, min(4, tpb * block // 32)),
        )  # fmt: skip
    out = FusedResult(q, ok.view(torch.bool), err[:, 0], err[:, 1], steps)
    if per_seed:
        pe_s, re_s = errs[..., 0], errs[..., 1]
        out = out._replace(
            seed_q=qs, seed_position_error=pe_s, seed_rotation_error=re_s, seed_free=free.view(torch.bool)
        )
    return out
