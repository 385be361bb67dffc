"""Self-collision spheres along the arm's links, shared by the batched IK (:mod:`.batched`) and its fused kernel
(:mod:`.fused`)."""

# ruff: noqa: N806  (math notation: M the centre map as in the SPEC)

from __future__ import annotations

import torch
from torch import Tensor

from ..kinematics import ArmKinematics
from ..se3 import mm


class SphereModel:
    """Self-collision spheres along the links of an :class:`ArmKinematics`.

    Link k (0 = base, k = i + 1 the child of arm joint i, the last one carrying the EE frame) is the segment
    from its frame origin to the next frame origin (fixed in link k); spheres of ``radius`` m sit at
    ``fractions`` of that segment. Pairs of spheres on links at least two apart are checked.
    """

    def __init__(
        self,
        kinematics: ArmKinematics,
        radius: float = 0.02,
        fractions: tuple[float, ...] = (0.3, 0.7),
    ) -> None:
        n = kinematics.dof
        dt, dev = kinematics.dtype, kinematics.device
        self.links = n + 1
        self.radius = radius
        self.fractions = fractions
        per = len(fractions)
        link_of = torch.arange(self.links).repeat_interleave(per)
        frac = torch.tensor(fractions, dtype=torch.float64).repeat(self.links)
        # centres = M @ (0, o_1, …, o_n, o_ee): start + f·(end − start) of each link's segment
        M = torch.zeros(len(link_of), self.links + 1, dtype=torch.float64)
        M[torch.arange(len(link_of)), link_of] = 1.0 - frac
        M[torch.arange(len(link_of)), link_of + 1] += frac
        self.M = M[:, 1:].to(dev, dt)  # the base origin is 0
        ia, ib = torch.triu_indices(len(link_of), len(link_of), offset=1)
        keep = (link_of[ib] - link_of[ia]) >= 2
        ia, ib = ia[keep], ib[keep]
        self.pair_a, self.pair_b = ia.to(dev), ib.to(dev)
        eye = torch.eye(len(link_of), dtype=torch.float64)
        self.Sa, self.Sb = eye[ia].to(dev, dt), eye[ib].to(dev, dt)  # (K, P) selection matrices
        self.link_of = link_of.to(dev)
        # joint i moves link k iff i < k
        moves = (torch.arange(n)[None, :] < link_of[:, None]).to(torch.float64)
        self.moves_a, self.moves_b = moves[ia].to(dev, dt), moves[ib].to(dev, dt)  # (K, n)

    def centers(self, frames: Tensor) -> Tensor:
        """Sphere centres (..., P, 3) in base from :meth:`ArmKinematics.link_frames` output (..., n + 1, 4, 4)."""
        return mm(self.M, frames[..., :3, 3])

    def depth(self, origins: Tensor, margin: float) -> Tensor:
        """Overlap (..., K) m ≥ 0 of each checked pair from the frame origins (..., n + 1, 3) in base (joint
        frames, then the EE frame: ``link_frames(q)[..., :3, 3]``); no gradient."""
        c = mm(self.M, origins)
        d = c[..., self.pair_a, :] - c[..., self.pair_b, :] if c.is_cuda else self.Sa @ c - self.Sb @ c
        return torch.clamp(2 * self.radius + margin - torch.linalg.vector_norm(d, dim=-1), min=0.0)

    def penetration(self, frames: Tensor, axes: Tensor, margin: float) -> tuple[Tensor, Tensor]:
        """``(pen (..., K) m ≥ 0, grad (..., K, n))``: overlap of each checked pair and d(distance)/dq.

        With the pair's unit direction ν = (c_a − c_b)/|c_a − c_b| and joint i's axis z_i through o_i,
        ∂|c_a − c_b|/∂q_i = ν·(z_i × (c_a − o_i)) − ν·(z_i × (c_b − o_i)) (the latter only for joints that
        move each sphere); ν·(z × (c − o)) = z·(c × ν) − ν·(z × o) turns it into batched matmuls.
        """
        n = axes.shape[0]
        c = self.centers(frames)  # (..., P, 3)
        if c.is_cuda:  # gathers are cheap on the GPU, selection matmuls on the CPU
            ca, cb = c[..., self.pair_a, :], c[..., self.pair_b, :]  # (..., K, 3)
        else:
            ca, cb = self.Sa @ c, self.Sb @ c
        d = ca - cb
        dist = torch.linalg.vector_norm(d, dim=-1)
        unit = d / torch.clamp(dist, min=1e-9)[..., None]
        z = mm(frames[..., :n, :3, :3], axes[..., None]).squeeze(-1)  # (..., n, 3)
        o = frames[..., :n, :3, 3]
        zt = z.transpose(-1, -2)
        nw = mm(unit, torch.linalg.cross(z, o, dim=-1).transpose(-1, -2))  # (..., K, n)
        ga = mm(torch.linalg.cross(ca, unit, dim=-1), zt) - nw
        gb = mm(torch.linalg.cross(cb, unit, dim=-1), zt) - nw
        grad = self.moves_a * ga - self.moves_b * gb
        pen = torch.clamp(2 * self.radius + margin - dist, min=0.0)
        return pen, grad
