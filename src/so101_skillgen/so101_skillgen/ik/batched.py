"""Batched multi-seed IK (cuRobo-style) in one torch program: B targets × S seeds, CPU or CUDA.

Every (target, seed) pair runs damped Gauss-Newton (Levenberg–Marquardt with fixed λ) on

    cost(q) = ‖W·e(q)‖²            pose error, base frame, position first; partial pose frees the swing (.pose_error)
            + w_l² Σ soft_limit(q)² joint-limit cost inside ``joint_limit_margin`` of each limit
            + w_c² Σ penetration²   self-collision between spheres on non-adjacent links

with the same W and adaptive rotation scaling as the DLS backend, steps clamped to ``max_step`` rad and
joints clipped to their limits. Every ``check_every`` iterations the loop stops once every target has a
converged seed. The best seed per target is kept: among the successful ones the closest to the caller's
seed (when given, for smooth trajectories), otherwise the smallest error.

On CUDA with Triton (``batched.fused``, default) the whole solve is one kernel launch (:mod:`.fused`: the
loop, the collision check and the pick of the best seed, no host synchronisation; the torch loop takes
~200 ms for 1024 targets × 32 seeds on an H200); collisions are then only checked on converged seeds
(colliding seeds are rejected, not pushed apart) and a target stops at its first good seed.
"""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, J Jacobian, H Hessian as in the SPEC)

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ..kinematics import ArmKinematics
from ..se3 import mm
from .base import IKBatchResult, IKConfig, IKError
from .jacobian import check_inputs
from .pose_error import perpendicular_unit, pose_error, project_angular
from .spheres import SphereModel

__all__ = ["BatchedIK"]


def spd_solve(H: Tensor, g: Tensor) -> Tensor:
    """x (..., n) with H x = g for symmetric positive-definite H (..., n, n): Cholesky unrolled into
    elementwise ops (n = 5 here), which beats batched library calls on tiny matrices and captures in a
    CUDA graph (no host synchronisation)."""
    n = H.shape[-1]
    L: list[list[Tensor]] = [[] for _ in range(n)]
    for j in range(n):
        d = H[..., j, j] - sum((L[j][k] ** 2 for k in range(j)), torch.zeros_like(H[..., 0, 0]))
        L[j].append(torch.sqrt(torch.clamp(d, min=1e-30)))
        for i in range(j + 1, n):
            off = H[..., i, j] - sum((L[i][k] * L[j][k] for k in range(j)), torch.zeros_like(H[..., 0, 0]))
            L[i].append(off / L[j][j])
    y: list[Tensor] = []
    for i in range(n):
        y.append((g[..., i] - sum((L[i][k] * y[k] for k in range(i)), torch.zeros_like(g[..., 0]))) / L[i][i])
    x: list[Tensor] = [torch.zeros_like(g[..., 0])] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum((L[k][i] * x[k] for k in range(i + 1, n)), torch.zeros_like(g[..., 0]))) / L[i][i]
    return torch.stack(x, dim=-1)


ANALYTIC_SEED_MAX = 16
"""Targets up to which the closed-form solution seeds the first start (cold single targets)."""


class BatchedIK:
    """Multi-seed batched IK (see module docstring); ``device`` defaults to the kinematics' device."""

    def __init__(
        self,
        config: IKConfig,
        kinematics: ArmKinematics | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        self.config = config
        kin = kinematics if kinematics is not None else ArmKinematics.from_urdf()
        self.kinematics = kin.to(device=device) if device is not None else kin
        self.device = self.kinematics.device
        self.spheres = SphereModel(self.kinematics)
        self._w = torch.tensor(config.weights, dtype=self.kinematics.dtype, device=self.device)
        self._perp = perpendicular_unit(self.kinematics.approach_axis)
        self._graphs: dict[tuple[int, bool], tuple[torch.cuda.CUDAGraph, Tensor, Tensor, tuple[Tensor, ...]]] = {}
        self._compiled: Callable[[Tensor, Tensor, bool], tuple[Tensor, Tensor, Tensor, Tensor]] | None = None
        self._fused_params: Tensor | None = None
        self._starts: Tensor | None = None
        self._analytic: Any = None
        self._flags: Tensor | None = None  # pinned host flags of the fused path's finiteness check
        self.fused = False  # the fused Triton kernel runs the solve (CUDA, ``batched.fused``, triton importable)
        if config.batched.fused and self.device.type == "cuda":
            try:
                from .fused import fused_supported
            except ImportError:  # no triton: the torch loop
                pass
            else:
                self.fused = fused_supported(self.kinematics, self.spheres)

    def self_collision(self, q: Tensor) -> Tensor:
        """(...,) bool: whether joints ``q`` (..., 5) put two non-adjacent link spheres in contact."""
        origins = self.kinematics.link_frames(q)[..., :3, 3]
        return (self.spheres.depth(origins, self.config.batched.collision_margin) > 1e-6).any(-1)

    def _draws(self, b: int, s: int) -> Tensor:
        """Random starts (B, S, 5), uniform within the limits from a CPU generator reseeded every call (the
        same on every device); the draws of the last shape are kept on the device (do not modify)."""
        kin = self.kinematics
        if self._starts is None or self._starts.shape[:2] != (b, s):
            gen = torch.Generator(device="cpu").manual_seed(self.config.batched.random_seed)
            u = torch.rand((b, s, kin.dof), generator=gen, dtype=kin.dtype).to(self.device)
            self._starts = (kin.lower + u * (kin.upper - kin.lower)).contiguous()
        return self._starts

    def _initial(self, b: int, seed: Tensor | None, s: int) -> Tensor:
        """Starts (B, S, 5): :meth:`_draws`, the first one ``seed`` (B, 5) clipped to the limits when given."""
        kin = self.kinematics
        q0 = self._draws(b, s).clone()
        if seed is not None:
            q0[:, 0] = torch.maximum(torch.minimum(seed.to(self.device, kin.dtype), kin.upper), kin.lower)
        return q0

    def _analytic_seed(self, target: Tensor, seed: Tensor | None) -> Tensor | None:
        """Closed-form solutions (B, 5) as the first start of few targets (≤ ANALYTIC_SEED_MAX, where the
        ~30 µs per target on the CPU is cheaper than the iterations it saves), else ``seed``."""
        if len(target) > ANALYTIC_SEED_MAX:
            return seed
        if self._analytic is None:
            from .analytic import AnalyticIK

            self._analytic = AnalyticIK(self.config, self.kinematics.to(device="cpu"))
        res = self._analytic.solve(target.detach().cpu(), None if seed is None else seed.detach().cpu())
        return res.q.to(self.device, self.kinematics.dtype)

    def _step_terms(self, q: Tensor, target: Tensor, partial: bool) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """(H (N, 5, 5), g (N, 5), position_error (N,), rotation_error (N,), max penetration (N,))."""
        cfg, bc, kin = self.config, self.config.batched, self.kinematics
        frames = kin.link_frames(q)
        T = frames[..., -1, :, :]
        J = kin.jacobian_from_frames(frames)
        e, pe, re = pose_error(target, T, kin.approach_axis, partial, self._perp)
        R = T[..., :3, :3]
        if partial:
            J = project_angular(J, R, kin.approach_axis)
        thr = cfg.rotation_scaling_threshold
        scale = torch.where(pe > thr, torch.clamp(thr / torch.clamp(pe, min=1e-12), min=cfg.rotation_scaling_min), 1.0)
        # weights in EE axes for rotation: rotate error and Jacobian rows into the EE frame
        Rt = R.transpose(-1, -2)
        e_loc = torch.cat([e[..., :3], mm(Rt, e[..., 3:, None]).squeeze(-1)], -1)
        J_loc = torch.cat([J[..., :3, :], mm(Rt, J[..., 3:, :])], -2)
        w = self._w * torch.cat([torch.ones_like(scale)[..., None].expand(*scale.shape, 3),
                                 scale[..., None].expand(*scale.shape, 3)], -1)  # fmt: skip
        Jw = J_loc * w[..., :, None]
        H = mm(J_loc.transpose(-1, -2), Jw)
        g = mm(Jw.transpose(-1, -2), e_loc[..., None]).squeeze(-1)
        # soft joint limits
        if bc.joint_limit_weight > 0:
            m = bc.joint_limit_margin
            below = torch.clamp(kin.lower + m - q, min=0.0)
            above = torch.clamp(q - (kin.upper - m), min=0.0)
            active = ((below > 0) | (above > 0)).to(q.dtype)
            wl2 = bc.joint_limit_weight**2
            H = H + torch.diag_embed(wl2 * active)
            g = g + wl2 * (below - above)
        # error-scaled Levenberg–Marquardt damping: λ² shrinks with the weighted error (full λ above 1 cm),
        # which keeps the weakly actuated direction (wrist roll moving the jaw centre on its ~8 mm lever
        # in partial pose) converging instead of stalling under a fixed λ = 0.05
        werr = torch.linalg.vector_norm(e_loc * w.sqrt(), dim=-1)
        lam2 = bc.damping**2 * torch.clamp(werr / thr, min=1e-4, max=1.0) if cfg.adaptive_damping else (
            torch.full_like(werr, bc.damping**2))  # fmt: skip
        H = H + torch.diag_embed(lam2[..., None].expand(*lam2.shape, kin.dof))
        maxpen = torch.zeros_like(pe)
        if bc.self_collision and bc.collision_weight > 0:
            pen, grad = self.spheres.penetration(frames, kin.axes, bc.collision_margin)
            act = (pen > 0).to(q.dtype)[..., None]
            gr = grad * act
            wc2 = bc.collision_weight**2
            H = H + wc2 * mm(gr.transpose(-1, -2), gr)
            g = g + wc2 * (gr * pen[..., None]).sum(-2)
            maxpen = pen.amax(-1)
        return H, g, pe, re, maxpen

    def _update(self, q: Tensor, target: Tensor, partial: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """One damped Gauss-Newton step: ``(q_next, position_error, rotation_error, max penetration)``, the
        errors at ``q``. No host synchronisation (CUDA-graph and ``torch.compile`` friendly)."""
        bc, kin = self.config.batched, self.kinematics
        H, g, pe, re, pen = self._step_terms(q, target, partial)
        dq = spd_solve(H, g)
        big = dq.abs().amax(-1, keepdim=True)
        dq = dq * torch.clamp(bc.max_step / torch.clamp(big, min=1e-12), max=1.0)
        return torch.maximum(torch.minimum(q + dq, kin.upper), kin.lower), pe, re, pen

    def _replay(self, q: Tensor, target: Tensor, partial: bool) -> Tensor:
        """``check_every`` :meth:`_update` steps from ``q`` through a CUDA graph captured once per shape."""
        key = (len(q), partial)
        if key not in self._graphs:
            static_q, static_t = q.clone(), target.clone()
            side = torch.cuda.Stream(device=self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(2):  # warm-up outside the capture (workspaces, lazy init)
                    self._update(static_q, static_t, partial)
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out: tuple[Tensor, ...] = (static_q, static_t, static_t, static_t)
                for _ in range(self.config.batched.check_every):
                    out = self._update(out[0], static_t, partial)
            self._graphs[key] = (graph, static_q, static_t, out)
        graph, static_q, static_t, out = self._graphs[key]
        static_q.copy_(q)
        static_t.copy_(target)
        graph.replay()
        return out[0].clone()

    def _compiled_update(self) -> Callable[[Tensor, Tensor, bool], tuple[Tensor, Tensor, Tensor, Tensor]]:
        if self._compiled is None:
            self._compiled = torch.compile(self._update, dynamic=True)
        return self._compiled

    def _iterate(self, q_all: Tensor, tgt_rep: Tensor, partial: bool) -> tuple[Tensor, int]:
        """The torch loop from seeds ``q_all`` (B, S, 5) against ``tgt_rep`` (B·S, 4, 4): (q (B·S, 5), iterations)."""
        cfg, bc, kin = self.config, self.config.batched, self.kinematics
        b, s = q_all.shape[:2]
        it = 0
        tol_p, tol_r = cfg.position_tolerance, cfg.rotation_tolerance
        # targets still iterating; solved ones drop out at each check (one host sync per check)
        active = torch.arange(b, device=self.device)
        q = q_all.reshape(b * s, kin.dof)
        tgt_a = tgt_rep
        use_graph = bc.cuda_graph and self.device.type == "cuda"
        step = self._compiled_update() if bc.compile else self._update
        while use_graph and it < bc.iterations:
            # fixed shapes, ``check_every`` iterations per graph replay, no compaction
            q = self._replay(q, tgt_a, partial)
            it += bc.check_every
            pe, re, pen = self._graphs[(len(q), partial)][3][1:]
            ok = ((pe <= tol_p) & (re <= tol_r) & (pen <= 1e-6)).reshape(-1, s).any(-1)
            if bool(ok.all()):
                break
        while not use_graph and it < bc.iterations:
            q_new, pe, re, pen = step(q, tgt_a, partial)
            if it % bc.check_every == 0 and it > 0:
                ok = ((pe <= tol_p) & (re <= tol_r) & (pen <= 1e-6)).reshape(-1, s).any(-1)
                if bool(ok.any()):
                    q_all[active] = q.reshape(-1, s, kin.dof)  # the state the check evaluated
                    keep = ~ok
                    active = active[keep]
                    if active.numel() == 0:
                        break
                    rows = keep.repeat_interleave(s)
                    q_new, tgt_a = q_new[rows], tgt_a[rows]
            q = q_new
            it += 1
        if active.numel():
            q_all[active] = q.reshape(-1, s, kin.dof)
        return q_all.reshape(b * s, kin.dof), it

    def solve(self, target: Tensor, seed: Tensor | None = None, *, partial_pose: bool = True) -> IKBatchResult:
        """Solve targets (B, 4, 4) from ``seeds`` starts each; ``seed`` (B, 5) is one of the starts and the
        tie-breaker among successful seeds (closest wins)."""
        kin, cfg, bc = self.kinematics, self.config, self.config.batched
        # fused: finiteness checked beside the kernel, unless the closed-form seed reads the targets first
        b = check_inputs(target, seed, kin.dof, finite=not self.fused)
        if self.fused and b <= ANALYTIC_SEED_MAX:
            check_inputs(target, seed, kin.dof)
        s = bc.seeds
        tgt = target.detach().to(self.device, kin.dtype)
        start = self._analytic_seed(tgt, None if seed is None else seed.detach())
        if self.fused:  # one Triton launch: loop, collision check, pick (errors at the picked q come with it)
            return self._solve_fused(tgt, start, seed, partial_pose, target.device, target.dtype)
        q_all = self._initial(b, start, s)  # (B, S, 5)
        tol_p, tol_r = cfg.position_tolerance, cfg.rotation_tolerance
        tgt_rep = tgt[:, None].expand(b, s, 4, 4).reshape(b * s, 4, 4)
        q, it = self._iterate(q_all, tgt_rep, partial_pose)
        frames = kin.link_frames(q)
        _, pe, re = pose_error(tgt_rep, frames[..., -1, :, :], kin.approach_axis, partial_pose)
        origins = frames[..., :3, 3]
        if bc.self_collision:
            free = self.spheres.depth(origins, bc.collision_margin).amax(-1) <= 1e-6
        else:
            free = torch.ones_like(pe, dtype=torch.bool)
        succ = (pe <= tol_p) & (re <= tol_r) & free
        err = pe + 0.05 * re
        if seed is not None:
            dist = torch.linalg.vector_norm(q - seed.to(self.device, kin.dtype).repeat_interleave(s, 0), dim=-1)
            score = torch.where(succ, dist, 1e3 + err)
        else:
            score = torch.where(succ, err, 1e3 + err)
        best = score.reshape(b, s).argmin(-1)
        idx = torch.arange(b, device=self.device) * s + best
        dev, dt = target.device, target.dtype
        return IKBatchResult(
            q=q[idx].to(dev, dt),
            success=succ[idx].to(dev),
            position_error=pe[idx].to(dev, dt),
            rotation_error=re[idx].to(dev, dt),
            iteration_count=it,
        )

    def _finite_later(self, target: Tensor, seed: Tensor | None) -> Callable[[], None]:
        """Queue the finiteness check of ``target`` (B, 4, 4) and ``seed`` (B, 5) on their device and return
        the function that waits for it alone (not for work queued after it, e.g. the kernel) and raises
        :class:`~.base.IKError` as :func:`.jacobian.check_inputs` does."""
        flags = [torch.isfinite(target).all(), None if seed is None else torch.isfinite(seed).all()]
        host: list[Tensor | None] = flags
        done: torch.cuda.Event | None = None
        if target.is_cuda:  # copied into pinned memory behind an event: waiting does not wait for the kernel
            if self._flags is None:
                self._flags = torch.empty(2, dtype=torch.bool, pin_memory=True)
            host = [None if f is None else self._flags[i].copy_(f, non_blocking=True) for i, f in enumerate(flags)]
            done = torch.cuda.Event()
            done.record(torch.cuda.current_stream(target.device))

        def wait() -> None:
            if done is not None:
                done.synchronize()
            for name, ok in zip(("target", "seed"), host, strict=True):
                if ok is not None and not bool(ok):
                    raise IKError(f"{name} must be finite")

        return wait

    def _solve_fused(
        self, tgt: Tensor, start: Tensor | None, seed: Tensor | None, partial: bool, dev: torch.device, dt: torch.dtype
    ) -> IKBatchResult:
        """:meth:`solve` through :func:`.fused.fused_solve` (targets ``tgt`` (B, 4, 4) on the solver's device
        and dtype; ``start`` the first start, ``seed`` the tie-breaker, (B, 5) each); results in ``dev``/``dt``."""
        from .fused import fused_params, fused_solve

        kin, cfg = self.kinematics, self.config
        if self._fused_params is None:
            cdt = torch.float32 if cfg.batched.fused_float32 else kin.dtype
            self._fused_params = fused_params(kin, cfg, self.spheres, cdt)

        def here(x: Tensor | None) -> Tensor | None:
            return None if x is None else x.detach().to(self.device, kin.dtype)

        first, tie = here(start), here(seed)
        finite = self._finite_later(tgt, tie)
        res = fused_solve(self._draws(len(tgt), cfg.batched.seeds), tgt, self._fused_params, cfg, partial, first, tie)
        finite()
        return IKBatchResult(
            q=res.q.to(dev, dt),
            success=res.success.to(dev),
            position_error=res.position_error.to(dev, dt),
            rotation_error=res.rotation_error.to(dev, dt),
            iteration_count=res.steps,
        )
