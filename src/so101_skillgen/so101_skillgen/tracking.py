"""FK replay and IK tracking behind one small interface, backend chosen by ``skillgen.ik.backend``.

Frames: everything is in the world (= robot base) frame; the end effector is the twin's
``gripperframe`` site (x along the jaws = approach axis, z from the fixed toward the moving jaw).
Partial-pose tracking: a *tool point* (3,) and a *tool axis* (3,), both in the EE frame, are driven to a
world point and a world direction; rotation about the tool axis stays free (5 arm joints).

- ``mujoco``: damped least squares Δq = Jᵀ(JJᵀ + λ²I)⁻¹·W·e on MuJoCo's Jacobian (position rows first,
  adaptive rotation scaling max(0.01 / |e_pos|, 0.05) above 1 cm), |Δq| ≤ ``max_step`` per iteration —
  :class:`so101_core.sim.ik.ArmIK` on a private ``MjData``.
- ``skillgen``: :mod:`so101_skillgen.ik` (torch, configured by ``ik.yaml``), asked for the full EE pose
  that carries the tool axis onto its target with the least rotation from the current EE, the target
  origin then corrected by the tool-point residual (≤ 3 solves); its URDF ``gripper_frame_link`` is the
  site rotated by Ry(+90°). About 0.4 s per solve on CPU: a correctness reference, not the fast path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from so101_core.arrays import F64
from so101_core.sim.config import default_config_dir
from so101_core.sim.ik import ArmIK, AxisTarget, IKSettings
from so101_core.sim.twin import Twin

from .config import IK_BACKENDS, TrackingConfig
from .errors import SkillGenConfigError


@dataclass(frozen=True)
class TrackResult:
    """``q`` (5,) rad; ``pos_error`` m of the tool point; ``axis_error`` rad of the tool axis."""

    q: F64
    pos_error: float
    axis_error: float


class Tracker(Protocol):
    """What generation needs from kinematics."""

    def fk(self, q: F64) -> F64:
        """EE frames (N, 4, 4) of arm joints ``q`` (N, 5) rad."""
        ...

    def solve(self, q_init: F64, point: F64, axis: F64, tool_point: F64, tool_axis: F64) -> TrackResult:
        """Joints (5,) moving ``tool_point`` (EE frame) to ``point`` (world) and ``tool_axis`` onto ``axis``."""
        ...

    def reset(self) -> None:
        """Forget what earlier solves left behind (an attempt then depends on its own index alone)."""
        ...


class MujocoTracker:
    """The ``mujoco`` backend on the twin's model (its simulation state is never touched)."""

    def __init__(self, twin: Twin, cfg: TrackingConfig) -> None:
        settings = IKSettings(damping=cfg.damping, max_step=cfg.max_step, iterations=cfg.iterations)
        ix = twin.index
        self._ik = ArmIK(twin.model, ix.ee_site, ix.qpos_adr[:5], ix.dof_adr[:5], settings)

    def fk(self, q: F64) -> F64:
        qs = np.asarray(q, dtype=np.float64).reshape(-1, 5)
        out = np.tile(np.eye(4), (len(qs), 1, 1))
        for i, row in enumerate(qs):
            pos, rot = self._ik.forward(row)
            out[i, :3, :3] = rot
            out[i, :3, 3] = pos
        return out

    def solve(self, q_init: F64, point: F64, axis: F64, tool_point: F64, tool_axis: F64) -> TrackResult:
        res = self._ik.solve(q_init, point, tool_point, [AxisTarget(tool_axis, axis)])
        return TrackResult(res.q, res.pos_error, res.axis_error)

    def reset(self) -> None:
        """Stateless: nothing to forget."""


_RY90 = np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])


def _align(r: F64, a_from: F64, a_to: F64) -> F64:
    """Rotation (3, 3) ``R' = Q·r`` with the smallest Q turning world direction ``a_from`` onto ``a_to``."""
    u, v = a_from / np.linalg.norm(a_from), a_to / np.linalg.norm(a_to)
    c = float(u @ v)
    w = np.cross(u, v)
    s = float(np.linalg.norm(w))
    if s < 1e-12:
        return r.copy()
    k = w / s
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    q = np.eye(3) + s * kx + (1 - c) * kx @ kx
    return np.asarray(q @ r)


class SkillgenTracker:
    """The ``skillgen`` backend: :func:`so101_skillgen.ik.load_ik_solver` and ``ArmKinematics`` (torch)."""

    def __init__(self, twin: Twin, cfg: TrackingConfig, config_dir: Path | None = None) -> None:
        try:
            import torch

            from so101_skillgen import ik as ik_mod
            from so101_skillgen.kinematics import ArmKinematics
        except ImportError as exc:  # pragma: no cover - depends on the colleague's package state
            raise SkillGenConfigError("skillgen.ik.backend", f"backend 'skillgen' is unavailable: {exc}") from exc
        path = Path(cfg.config)
        if not path.is_absolute():
            path = (config_dir or default_config_dir()) / path
        loader: Any = getattr(ik_mod, "load_ik_solver", None)
        if loader is None:  # pragma: no cover
            raise SkillGenConfigError("skillgen.ik.backend", "so101_skillgen.ik has no load_ik_solver")
        try:
            self._solver = loader(ik_mod.load_ik_config(path))
        except Exception as exc:  # the colleague's config errors carry their own field names
            raise SkillGenConfigError("skillgen.ik.config", f"{path}: {exc}") from exc
        self._torch = torch
        self._kin = ArmKinematics.from_urdf()
        self._mj = MujocoTracker(twin, cfg)

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def fk(self, q: F64) -> F64:
        t = self._kin.fk(self._torch.as_tensor(np.asarray(q).reshape(-1, 5), dtype=self._torch.float64))
        return np.asarray(t.detach().cpu().numpy()) @ np.linalg.inv(_RY90)

    def solve(self, q_init: F64, point: F64, axis: F64, tool_point: F64, tool_axis: F64) -> TrackResult:
        """Full-pose solve of the EE pose that carries the tool axis onto ``axis`` with the least rotation
        from the current EE, then up to 3 corrections of the target origin by the tool-point residual."""
        torch = self._torch
        cur = self._mj.fk(q_init)[0]
        rot = _align(cur[:3, :3], cur[:3, :3] @ tool_axis, axis)
        target = np.eye(4)
        target[:3, :3] = rot
        target[:3, 3] = point - rot @ tool_point
        q = np.asarray(q_init, dtype=np.float64)
        pos_err = np.inf
        for _ in range(3):
            tt = torch.as_tensor((target @ _RY90)[None], dtype=torch.float64)
            seed = torch.as_tensor(q[None], dtype=torch.float64)
            res = self._solver.solve(tt, seed, partial_pose=False)
            q = np.asarray(res.q.detach().cpu().numpy()[0], dtype=np.float64)
            got = self._mj.fk(q)[0]
            miss = point - (got[:3, :3] @ tool_point + got[:3, 3])
            pos_err = float(np.linalg.norm(miss))
            if pos_err < 1e-3:
                break
            target[:3, 3] += miss
        got = self._mj.fk(q)[0]
        ang = float(np.arccos(np.clip((got[:3, :3] @ tool_axis) @ (axis / np.linalg.norm(axis)), -1.0, 1.0)))
        return TrackResult(q, pos_err, ang)


def _axis_rotation(d: F64, angle: float) -> F64:
    k = d / np.linalg.norm(d)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.asarray(np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx)


BRANCH_JUMP = 0.3  # rad (largest joint change): a solution that far from the last one is another IK branch
SECANT_STEPS = 8  # secant steps on the signed swing before the golden-section search takes over
SECANT_REACH = 0.3  # rad: the secant search stays this near the last call's ψ (else another branch's root)
ROOT_GRID = 48  # intervals of the full turn searched for sign changes of the swing after a lost branch
ROOT_TOLERANCE = 1e-9  # |signed swing| (sine) at a root
SEARCH_STEPS = 9  # golden-section steps of the least-swing search (the window shrinks to 1.3 % of its width)


class AnalyticTracker:
    """The ``analytic`` backend: closed-form IK (:class:`so101_skillgen.ik.AnalyticIK`) with the rotation ψ
    about the tool axis — free in a point + axis target — searched for the value the arm can take exactly (the
    approach axis in the arm's plane: zero out-of-plane swing), as a root of the signed swing
    (:meth:`AnalyticIK.out_of_plane`, no solve per evaluation). Tracking steps are close, so a secant search
    from the last call's ψ usually lands in 3-5 evaluations and one solve; when that root is far from the
    seed's joints or outside the limits, every root of the full turn is found (sign changes, regula falsi)
    and the best inside the limits kept; only when none is, a golden-section search of the least swing
    (one solve, ~0.04 ms, per candidate)."""

    def __init__(self, twin: Twin, cfg: TrackingConfig) -> None:
        from so101_skillgen.ik import AnalyticIK
        from so101_skillgen.ik.base import IKConfig
        from so101_skillgen.kinematics import ArmKinematics

        self._ik = AnalyticIK(IKConfig(), ArmKinematics.from_urdf())
        self._mj = MujocoTracker(twin, cfg)
        self._psi = 0.0
        self._tolerance = cfg.tolerance

    def fk(self, q: F64) -> F64:
        return self._mj.fk(q)

    def reset(self) -> None:
        """Start the next secant search from ψ = 0, as after construction (the last call's ψ otherwise)."""
        self._psi = 0.0

    @staticmethod
    def _target(r0: F64, d: F64, psi: float, point: F64, tool_point: F64) -> tuple[Any, Any]:
        """The URDF EE target (rotation rows, origin) of EE rotation ``r0`` turned by ψ about ``d``, with the
        tool point on ``point``."""
        rot = _axis_rotation(d, psi) @ r0
        p = point - rot @ tool_point
        ru = rot @ _RY90[:3, :3]
        return (tuple(ru[0]), tuple(ru[1]), tuple(ru[2])), (float(p[0]), float(p[1]), float(p[2]))

    def _try(self, r0: F64, d: F64, psi: float, point: F64, tool_point: F64, seed: tuple[float, ...]) -> Any:
        return self._ik.solve_one(*self._target(r0, d, psi, point, tool_point), seed)

    def _swing(self, r0: F64, d: F64, point: F64, tool_point: F64, pan: float) -> Callable[[float], float | None]:
        """ψ → the signed out-of-plane swing (:meth:`AnalyticIK.out_of_plane`) of the target turned by ψ about
        ``d``: cheap (no solve), zero where the arm takes the target exactly."""
        return lambda psi: self._ik.out_of_plane(*self._target(r0, d, psi, point, tool_point), pan)

    def _secant(self, swing: Callable[[float], float | None], start: float) -> float | None:
        """A root of ``swing`` within ``SECANT_REACH`` of ``start`` (rad), or None."""
        x0, x1 = start, start + 0.01
        f0, f1 = swing(x0), swing(x1)
        for _ in range(SECANT_STEPS):
            if f0 is None or f1 is None or f1 == f0:
                return None
            if abs(f1) < ROOT_TOLERANCE:
                return x1
            x0, f0, x1 = x1, f1, x1 - f1 * (x1 - x0) / (f1 - f0)
            if abs(x1 - start) > SECANT_REACH:
                return None
            f1 = swing(x1)
        return x1 if f1 is not None and abs(f1) < ROOT_TOLERANCE else None

    @staticmethod
    def _roots(swing: Callable[[float], float | None]) -> list[float]:
        """Every root of ``swing`` over the full turn: sign changes on a ``ROOT_GRID`` grid, each closed in by
        regula falsi (Illinois)."""
        grid = np.linspace(-np.pi, np.pi, ROOT_GRID + 1)
        vals = [swing(float(x)) for x in grid]
        roots = []
        for a, b, fa, fb in zip(grid[:-1], grid[1:], vals[:-1], vals[1:], strict=True):
            if fa is None or fb is None or fa * fb > 0:
                continue
            lo, hi, flo, fhi, side = float(a), float(b), fa, fb, 0
            x = lo
            for _ in range(40):
                x = (lo * fhi - hi * flo) / (fhi - flo) if fhi != flo else 0.5 * (lo + hi)
                fx = swing(x)
                if fx is None or abs(fx) < ROOT_TOLERANCE:
                    break
                if fx * fhi > 0:
                    hi, fhi = x, fx
                    flo = flo * 0.5 if side == -1 else flo
                    side = -1
                else:
                    lo, flo = x, fx
                    fhi = fhi * 0.5 if side == 1 else fhi
                    side = 1
            roots.append(x)
        return roots

    def solve(self, q_init: F64, point: F64, axis: F64, tool_point: F64, tool_axis: F64) -> TrackResult:
        cur = self._mj.fk(q_init)[0]
        d = axis / np.linalg.norm(axis)
        r0 = _align(cur[:3, :3], cur[:3, :3] @ tool_axis, d)
        seed = tuple(float(x) for x in q_init)

        def cost_of(sol: Any) -> float:
            near = sum((a - b) ** 2 for a, b in zip(sol.q, seed, strict=True))
            return (sol.swing if sol.ok else 10.0) + 1e-3 * near

        def result(psi: float, sol: Any = None) -> TrackResult:
            sol = sol or self._try(r0, d, psi, point, tool_point, seed)
            q = np.asarray(sol.q, dtype=np.float64)
            got = self._mj.fk(q)[0]
            pos_err = float(np.linalg.norm(point - (got[:3, :3] @ tool_point + got[:3, 3])))
            ang = float(np.arccos(np.clip((got[:3, :3] @ tool_axis) @ d, -1.0, 1.0)))
            return TrackResult(q, pos_err, ang)

        swing = self._swing(r0, d, point, tool_point, seed[0])
        root = self._secant(swing, self._psi)
        local = None
        if root is not None:
            local = (root, self._try(r0, d, root, point, tool_point, seed))
            if cost_of(local[1]) <= 1e-3:  # the branch the last step was on: the tracking case
                return self._keep(root, result(*local))
        # lost the branch (or a cold start): the least-cost root of the full turn inside the limits
        found = [(x, self._try(r0, d, x, point, tool_point, seed)) for x in self._roots(swing)]
        found = [c for c in found if c[1].ok]
        if not found:  # no ψ puts the approach in the plane inside the limits: the least swing instead
            return self._search(r0, d, point, tool_point, seed, cost_of, result)
        psi_far, sol_far = min(found, key=lambda c: cost_of(c[1]))
        far = result(psi_far, sol_far)
        if local is None:
            return self._keep(psi_far, far)
        return self._keep(*self._local_or_far((local[0], result(*local)), (psi_far, far), q_init))

    def _keep(self, psi: float, res: TrackResult) -> TrackResult:
        self._psi = float(np.arctan2(np.sin(psi), np.cos(psi)))
        return res

    def _local_or_far(
        self, local: tuple[float, TrackResult], far: tuple[float, TrackResult], q_init: F64
    ) -> tuple[float, TrackResult]:
        """Keep the local branch while it still tracks within tolerance (a far branch is a joint jump), else the
        one that tracks better."""
        res, other = local[1], far[1]
        jump = float(np.max(np.abs(other.q - np.asarray(q_init, dtype=np.float64))))
        local_ok = res.pos_error <= self._tolerance and res.axis_error <= 0.1
        if not (local_ok and jump > BRANCH_JUMP) and (
            other.pos_error + 0.05 * other.axis_error < res.pos_error + 0.05 * res.axis_error
        ):
            return far
        return local

    def _search(
        self,
        r0: F64,
        d: F64,
        point: F64,
        tool_point: F64,
        seed: tuple[float, ...],
        cost_of: Callable[[Any], float],
        result: Callable[..., TrackResult],
    ) -> TrackResult:
        """Golden-section search of ψ for the least cost (swing inside the limits, then nearness to the seed)
        around the last angle, then over a sweep of the full turn: one closed-form solve per candidate."""

        def cost(psi: float) -> float:
            return cost_of(self._try(r0, d, psi, point, tool_point, seed))

        def refine(lo: float, hi: float) -> float:  # golden section on [lo, hi]
            g = 0.6180339887498949
            a, b = hi - g * (hi - lo), lo + g * (hi - lo)
            fa, fb = cost(a), cost(b)
            for _ in range(SEARCH_STEPS):
                if fa < fb:
                    hi, b, fb = b, a, fa
                    a = hi - g * (hi - lo)
                    fa = cost(a)
                else:
                    lo, a, fa = a, b, fb
                    b = lo + g * (hi - lo)
                    fb = cost(b)
            return a if fa < fb else b

        psi = refine(self._psi - 0.15, self._psi + 0.15)
        res = result(psi)
        if cost(psi) > 1e-3:
            grid = np.linspace(-np.pi, np.pi, 25)[:-1]
            best = float(grid[int(np.argmin([cost(float(x)) for x in grid]))])
            psi_far = refine(best - 0.3, best + 0.3)
            psi, res = self._local_or_far((psi, res), (psi_far, result(psi_far)), np.asarray(seed))
        return self._keep(psi, res)


def make_tracker(twin: Twin, cfg: TrackingConfig, config_dir: Path | None = None) -> Tracker:
    """The tracker for ``cfg.backend``; an unknown name raises :class:`SkillGenConfigError`
    (field ``skillgen.ik.backend``)."""
    if cfg.backend == "mujoco":
        return MujocoTracker(twin, cfg)
    if cfg.backend == "skillgen":
        return SkillgenTracker(twin, cfg, config_dir)
    if cfg.backend == "analytic":
        return AnalyticTracker(twin, cfg)
    raise SkillGenConfigError("skillgen.ik.backend", f"unknown IK backend {cfg.backend!r} (known: {list(IK_BACKENDS)})")
