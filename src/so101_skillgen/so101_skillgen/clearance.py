"""Jaw clearance of a grasp: how low the fingertip pads sweep while the gripper closes.

A 5-joint arm cannot follow a retargeted grasp exactly: the approach axis must stay in the arm's vertical
plane, so when the vial's heading relative to that plane differs from the seed's, tracking the tool point
and the vial's axis tilts the jaw line (EE z) about the approach axis, and the moving jaw, swinging in from
8 cm out, sweeps lower than in the seed: it closes into the mat and the grasp lifts nothing (the wide DR's
``miss`` failures, all at headings turned clockwise from the base). Generation measures the pads' lowest
point over the closing arc, in the seed and in the tracked retarget (see ``AttemptRunner.grasp_axis``).

Frames: EE = the twin's ``ee_site`` (x along the jaws, z from the fixed toward the moving jaw); heights
are world z, m.
"""

from __future__ import annotations

import mujoco
import numpy as np
from so101_core.arrays import F64
from so101_core.sim.twin import Twin


class JawClearance:
    """Pad boxes in the EE frame (centre, rotation, half-sizes), tabulated over gripper angles (rad)."""

    def __init__(self, twin: Twin, samples: int = 12) -> None:
        model, ix = twin.model, twin.index
        lo = twin.grasp_geometry().close_angle
        hi = float(model.jnt_range[model.jnt_qposadr == ix.qpos_adr[5]][0][1])
        self.close_angle = lo
        self.angles = np.linspace(lo, max(hi, lo), samples)  # (A,)
        data = mujoco.MjData(model)
        centres, rots = [], []
        for a in self.angles:
            data.qpos[ix.qpos_adr[5]] = a
            mujoco.mj_kinematics(model, data)
            r_site = data.site_xmat[ix.ee_site].reshape(3, 3)
            o = data.site_xpos[ix.ee_site]
            centres.append([r_site.T @ (data.geom_xpos[g] - o) for g in ix.pad_geoms])
            rots.append([r_site.T @ data.geom_xmat[g].reshape(3, 3) for g in ix.pad_geoms])
        self._centres = np.asarray(centres)  # (A, 2, 3) EE frame, m
        self._rots = np.asarray(rots)  # (A, 2, 3, 3) pad box axes in the EE frame
        self._sizes = np.asarray([model.geom_size[g] for g in ix.pad_geoms])  # (2, 3) half-sizes, m

    def lowest(self, ee: F64, opening: float) -> float:
        """Lowest world z (m) of either pad while the gripper closes from ``opening`` rad to the vial (the
        pads stop at the close angle), the EE at ``ee`` (4, 4)."""
        t = np.asarray(ee, dtype=np.float64)
        rz = t[2, :3]
        use = self.angles <= max(float(opening), self.close_angle) + 1e-9
        use[0] = True
        c, r = self._centres[use], self._rots[use]
        spread = np.einsum("apk,pk->ap", np.abs(np.einsum("j,apjk->apk", rz, r)), self._sizes)
        low = t[2, 3] + c @ rz - spread
        return float(low.min())
