"""Damped-least-squares IK for the 5 arm joints on MuJoCo's Jacobian (partial pose: point + axes).

Δq = Jᵀ(JJᵀ + λ²I)⁻¹·W·e with position rows first; each axis target adds 3 rows (rank 2) so the
rotation about a constrained axis stays free. Rotation weight is scaled by max(0.01 / |e_pos|, 0.05)
while the position error exceeds 1 cm (position first on large motions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import ArrayLike

from so101_core.arrays import F64


@dataclass(frozen=True)
class AxisTarget:
    """Align ``local_axis`` (3,) of the end-effector site frame with world direction ``world_dir`` (3,)."""

    local_axis: ArrayLike
    world_dir: ArrayLike
    weight: float = 1.0


@dataclass(frozen=True)
class IKResult:
    q: F64  # (n,) rad, arm joints
    pos_error: float  # m
    axis_error: float  # rad, largest angle between an aligned axis and its target
    converged: bool


@dataclass(frozen=True)
class IKSettings:
    damping: float = 0.05
    max_step: float = 0.1  # rad per iteration, per joint
    iterations: int = 150
    pos_tol: float = 5e-4  # m
    axis_tol: float = 0.02  # rad


class ArmIK:
    """IK on a private ``MjData`` (the caller's simulation state is never touched).

    ``qpos_adr``/``dof_adr``: addresses of the arm joints solved for (5 for the SO-101 arm).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        site_id: int,
        qpos_adr: ArrayLike,
        dof_adr: ArrayLike,
        settings: IKSettings | None = None,
    ) -> None:
        self._m = model
        self._d = mujoco.MjData(model)
        self._site = site_id
        self._body = int(model.site_bodyid[site_id])
        self._qadr = np.asarray(qpos_adr, dtype=np.int64)
        self._dadr = np.asarray(dof_adr, dtype=np.int64)
        jnt = [int(np.flatnonzero(model.jnt_qposadr == a)[0]) for a in self._qadr]
        self._lo = model.jnt_range[jnt, 0].copy()
        self._hi = model.jnt_range[jnt, 1].copy()
        self.settings = settings or IKSettings()
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))

    def forward(self, q: F64) -> tuple[F64, F64]:
        """Site position (3,) m and rotation (3, 3) for arm joints ``q``."""
        self._d.qpos[self._qadr] = q
        mujoco.mj_kinematics(self._m, self._d)
        return self._d.site_xpos[self._site].copy(), self._d.site_xmat[self._site].reshape(3, 3).copy()

    def solve(
        self,
        q_init: F64,
        target_pos: F64,
        point: F64 | None = None,
        axes: Sequence[AxisTarget] = (),
    ) -> IKResult:
        """Move ``point`` (3,), given in the site frame (default origin), to ``target_pos`` (3,) world m."""
        s = self.settings
        q = np.clip(np.asarray(q_init, dtype=np.float64).copy(), self._lo, self._hi)
        p_local = np.zeros(3) if point is None else np.asarray(point, dtype=np.float64)
        target = np.asarray(target_pos, dtype=np.float64)
        axes_l = [
            (
                np.asarray(a.local_axis, float),
                np.asarray(a.world_dir, float) / np.linalg.norm(a.world_dir),
                a.weight,
            )
            for a in axes
        ]
        pos_err = np.inf
        axis_err = 0.0
        for _ in range(s.iterations):
            pos, rot = self.forward(q)
            mujoco.mj_comPos(self._m, self._d)
            p = pos + rot @ p_local
            e_pos = target - p
            pos_err = float(np.linalg.norm(e_pos))
            mujoco.mj_jac(self._m, self._d, self._jacp, self._jacr, p, self._body)
            jp = self._jacp[:, self._dadr]
            jr = self._jacr[:, self._dadr]
            rot_scale = max(0.01 / pos_err, 0.05) if pos_err > 0.01 else 1.0
            rows = [jp]
            errs = [e_pos]
            axis_err = 0.0
            for local, want, w in axes_l:
                cur = rot @ local
                axis_err = max(axis_err, float(np.arccos(np.clip(cur @ want, -1.0, 1.0))))
                # d(cur)/dt = ω × cur = −[cur]× ω
                skew = np.array([[0, -cur[2], cur[1]], [cur[2], 0, -cur[0]], [-cur[1], cur[0], 0]])
                ww = w * rot_scale
                rows.append(-ww * skew @ jr)
                errs.append(ww * (want - cur))
            if pos_err < s.pos_tol and axis_err < s.axis_tol:
                return IKResult(q, pos_err, axis_err, True)
            jac = np.vstack(rows)
            err = np.concatenate(errs)
            dq = jac.T @ np.linalg.solve(jac @ jac.T + s.damping**2 * np.eye(jac.shape[0]), err)
            big = np.max(np.abs(dq))
            if big > s.max_step:
                dq *= s.max_step / big
            q = np.clip(q + dq, self._lo, self._hi)
        return IKResult(q, pos_err, axis_err, pos_err < 3 * s.pos_tol and axis_err < 3 * s.axis_tol)
