"""IK benchmark: success rate and latency of each backend on reachable FK targets.

``python -m so101_skillgen.bench_ik --device cuda`` prints the JSON of :func:`run_ik_benchmark`.

Targets are FK of joints drawn uniformly within the limits and free of self-collision (sphere model), so
every target is reachable; success is the solver's own verdict (position ≤ ``position_tolerance``, approach
axis ≤ ``rotation_tolerance``, partial pose), verified independently in the tests.
"""

# ruff: noqa: N803, N806  (math notation: R rotation, T pose, J Jacobian)

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from .ik import AnalyticIK, BatchedIK, IKBatchResult, JacobianIK, load_ik_config
from .ik.analytic import _mat
from .ik.base import IKConfig
from .ik.pose_error import pose_error, swing_axis
from .kinematics import ArmKinematics

__all__ = ["run_ik_benchmark"]


def _targets(kin: ArmKinematics, checker: BatchedIK, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    out: list[torch.Tensor] = []
    have = 0
    while have < n:
        q = kin.to(device="cpu").random_q(2 * n, gen)
        q = q[~checker.self_collision(q.to(checker.device)).cpu()]
        out.append(q)
        have += len(q)
    q = torch.cat(out)[:n]
    return q, kin.to(device="cpu").fk(q)


def _latencies(fn: Callable[[int], IKBatchResult], n: int) -> tuple[list[float], list[bool]]:
    times: list[float] = []
    ok: list[bool] = []
    for i in range(n):
        t0 = time.perf_counter()
        res = fn(i)
        times.append(time.perf_counter() - t0)
        ok.append(bool(res.success.all()))
    return times, ok


def _summary(times: list[float], ok: list[bool]) -> dict[str, float]:
    ms = sorted(t * 1e3 for t in times)
    return {
        "solves": len(ms),
        "success_pct": 100.0 * sum(ok) / max(len(ok), 1),
        "median_ms": statistics.median(ms),
        "p90_ms": ms[min(len(ms) - 1, math.ceil(0.9 * len(ms)) - 1)],
        "mean_ms": statistics.fmean(ms),
    }


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_ik_benchmark(
    *,
    device: str = "cpu",
    batched_targets: int = 1024,
    seeds: int = 32,
    single_solves: int = 200,
    config: str | Path | Mapping[str, Any] | IKConfig | None = None,
    repeats: int = 3,
    threads: int | None = None,
) -> dict[str, Any]:
    """Success % and latency per backend.

    - ``cold_single_*``: the closed-form backend (the default in ik.yaml), one target at a time from no seed
      (neutral), 10,000 targets; success re-checked here by FK: within 1 mm and 2° on the controllable axes
      (the out-of-plane swing excluded); ``partial_*``: targets turned 3° out of the arm's plane or rolled
      20° about the approach axis (partial pose: solved when the position and the controllable rotation
      match; rolled targets can leave wrist_roll's range).
    - ``jacobian_tracking``: DLS, one target at a time on the CPU, seeded 0.02 rad (≈ a few mm) from a solution
      — the SkillGen tracking case (one 30 Hz trajectory step).
    - ``jacobian_cold``: DLS with no seed: started from the closed-form solution (then restarts).
    - ``batched_single``: batched backend with B = 1 (``seeds`` starts, the first the closed-form one) on the CPU.
    - ``batched_batch``: B = ``batched_targets`` × ``seeds`` on ``device``, ms per batch (CUDA events when on
      cuda), best (``ms_per_batch``) and worst of ``repeats`` after a warm-up at that shape; ``cold_ms`` the
      first call at that shape (kernel load or compile, random draws); on cuda also the device kernels,
      copies and host torch ops of one call (torch.profiler) and, from the fused kernel, the per-target
      iteration spread (its time follows the slowest target, ``iterations``).

    ``threads`` sets ``torch.set_num_threads`` for the run (restored after): on a small, shared CPU one
    thread beats two contended ones for these small tensors.
    """
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _run(device, batched_targets, seeds, single_solves, config, repeats)
    finally:
        torch.set_num_threads(before)


def _run(
    device: str,
    batched_targets: int,
    seeds: int,
    single_solves: int,
    config: str | Path | Mapping[str, Any] | IKConfig | None,
    repeats: int,
) -> dict[str, Any]:
    dev = torch.device(device)
    cfg = load_ik_config(config)
    cfg = IKConfig(**{**cfg.__dict__, "batched": type(cfg.batched)(**{**cfg.batched.__dict__, "seeds": seeds})})
    kin_cpu = ArmKinematics.from_urdf()
    checker = BatchedIK(cfg, kin_cpu)
    n_single = max(1, single_solves)
    q, T = _targets(kin_cpu, checker, max(n_single, batched_targets), seed=11)
    gen = torch.Generator().manual_seed(12)
    near = q + 0.02 * torch.randn(q.shape, generator=gen, dtype=q.dtype)
    near = torch.maximum(torch.minimum(near, kin_cpu.upper), kin_cpu.lower)
    out: dict[str, Any] = {
        "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "seeds": seeds,
        "iterations_cap": {"jacobian": cfg.jacobian.iterations, "batched": cfg.batched.iterations},
    }

    out.update(_cold(cfg, kin_cpu, checker))
    jac = JacobianIK(cfg, kin_cpu)
    out["jacobian_tracking"] = _summary(*_latencies(lambda i: jac.solve(T[i : i + 1], near[i : i + 1]), n_single))
    n_cold = max(1, min(n_single, 50))
    out["jacobian_cold"] = _summary(*_latencies(lambda i: jac.solve(T[i : i + 1]), n_cold))

    n_b1 = max(1, min(n_single, 20))
    out["batched_single"] = _summary(*_latencies(lambda i: checker.solve(T[i : i + 1]), n_b1))

    solver = BatchedIK(cfg, kin_cpu, dev)
    tb = T[:batched_targets].to(dev)
    cold_ms, _ = _timed(dev, lambda: solver.solve(tb))  # first full-size call: kernel load / compile, draws
    solver.solve(tb)  # warm-up at the timed shape
    times: list[float] = []
    res: IKBatchResult | None = None
    for _ in range(max(1, repeats)):
        ms, res = _timed(dev, lambda: solver.solve(tb))
        times.append(ms)
    assert res is not None
    best = min(times)
    out["batched_batch"] = {
        "targets": len(tb),
        "seeds": seeds,
        "ms_per_batch": best,
        "us_per_target": 1e3 * best / len(tb),
        "worst_ms": max(times),
        "cold_ms": cold_ms,
        "success_pct": 100.0 * res.success_rate,
        "iterations": res.iterations,
        "fused_kernel": solver.fused,
        "fused_float32": solver.fused and cfg.batched.fused_float32,
        **_iteration_spread(res),
        **(_launches(dev, lambda: solver.solve(tb)) if dev.type == "cuda" else {}),
    }
    return out


def _timed(dev: torch.device, fn: Callable[[], IKBatchResult]) -> tuple[float, IKBatchResult]:
    """(ms, result) of one call: CUDA events around it on cuda (from an idle device), else the wall clock."""
    _sync(dev)
    if dev.type != "cuda":
        t0 = time.perf_counter()
        res = fn()
        return (time.perf_counter() - t0) * 1e3, res
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    res = fn()
    end.record()
    torch.cuda.synchronize(dev)
    return float(start.elapsed_time(end)), res


def _iteration_spread(res: IKBatchResult) -> dict[str, float]:
    """Median and 99th percentile of the per-target iteration counts when the solver reports them (the
    fused kernel: its time follows the slowest target of the batch, ``iterations``)."""
    n = res.iteration_count
    if not isinstance(n, torch.Tensor) or n.numel() == 0:
        return {}
    v = n.double().cpu()
    return {"iterations_p50": float(v.quantile(0.5)), "iterations_p99": float(v.quantile(0.99))}


def _launches(dev: torch.device, fn: Callable[[], object]) -> dict[str, int]:
    """Device work of one call, counted by torch.profiler: CUDA kernels, memory copies / sets, and the
    top-level torch ops on the host."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=acts) as prof:
        fn()
        _sync(dev)
    kernels = copies = 0
    for ev in prof.events():
        if ev.device_type != torch.autograd.DeviceType.CUDA:
            continue
        if "memcpy" in ev.name.lower() or "memset" in ev.name.lower():
            copies += 1
        else:
            kernels += 1
    ops = sum(1 for ev in prof.events() if ev.cpu_parent is None and ev.name.startswith("aten::"))
    return {"kernel_launches": kernels, "memcpy_memset": copies, "host_torch_ops": ops}


def _turned(T: torch.Tensor, angle: float, out_of_plane: bool) -> torch.Tensor:
    """Targets (N, 4, 4) rotated by ``angle`` rad about the swing axis (out of the arm's plane) or about
    their approach axis, the EE origin kept."""
    out = T.clone()
    a = T[:, :3, 2]
    axis = swing_axis(a) if out_of_plane else a
    k = axis / torch.linalg.vector_norm(axis, dim=-1, keepdim=True)
    K = torch.zeros(len(T), 3, 3, dtype=T.dtype)
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    K = K - K.transpose(1, 2)
    rot = torch.eye(3, dtype=T.dtype) + math.sin(angle) * K + (1 - math.cos(angle)) * (K @ K)
    out[:, :3, :3] = rot @ T[:, :3, :3]
    return out


def _cold(cfg: IKConfig, kin: ArmKinematics, checker: BatchedIK, n: int = 10_000) -> dict[str, Any]:
    """Closed-form, cold single targets: latency percentiles and FK-checked accuracy."""
    ik = AnalyticIK(cfg, kin)
    _, T = _targets(kin, checker, n, seed=21)
    Tn = T.numpy()
    args = [(_mat(t[:3, :3]), (float(t[0, 3]), float(t[1, 3]), float(t[2, 3]))) for t in Tn]
    for R, p in args[:200]:  # warm-up (first-call costs of the interpreter's caches)
        ik.solve_one(R, p)
    times, qs = [], []
    for R, p in args:
        t0 = time.perf_counter()
        sol = ik.solve_one(R, p)
        times.append(time.perf_counter() - t0)
        qs.append(sol.q)
    got = kin.fk(torch.tensor(qs, dtype=torch.float64))
    _, pe, re = pose_error(T, got, kin.approach_axis, True)
    ok = (pe <= 1e-3) & (re <= math.radians(2.0))
    ms = sorted(t * 1e3 for t in times)
    res: dict[str, Any] = {
        "cold_single_backend": "analytic",
        "cold_single_targets": n,
        "cold_single_ms_p50": round(ms[len(ms) // 2], 5),
        "cold_single_ms_p90": round(ms[int(0.9 * len(ms))], 5),
        "cold_single_ms_max": round(ms[-1], 5),
        "cold_single_success_pct": round(100.0 * float(ok.double().mean()), 3),
        "cold_single_position_error_max_m": float(pe.max()),
        "cold_single_rotation_error_max_rad": float(re.max()),
    }
    m = min(n, 2000)
    for key, angle, plane in (("partial_out_of_plane_3deg", 3.0, True), ("partial_roll_20deg", 20.0, False)):
        Tt = _turned(T[:m], math.radians(angle), plane)
        r = ik.solve(Tt)
        res[f"{key}_success_pct"] = round(100.0 * r.success_rate, 2)
    return res


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batched-targets", type=int, default=1024)
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--single-solves", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    result = run_ik_benchmark(
        device=args.device,
        batched_targets=args.batched_targets,
        seeds=args.seeds,
        single_solves=args.single_solves,
        threads=args.threads,
    )
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
