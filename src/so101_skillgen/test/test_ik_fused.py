"""The fused Triton IK kernel (so101_skillgen.ik.fused) on the CPU through Triton's interpreter.

The interpreter must be chosen before the kernel is defined, so the checks run in subprocesses with
``TRITON_INTERPRET=1`` (this file as a script, one process per part of :data:`PARTS`, side by side) and report
JSON; the tests assert on the merged report. Checked: a few iterations agree lane for lane with the torch step
(float64, no collision term in either); the kernel's sphere check agrees with :class:`SphereModel` (colliding
solutions are never picked); full solves through :class:`BatchedIK` with the fused kernel reach the targets (FK:
1 mm / 2°), as often as the torch loop, free of self-collision and within the limits, for partial and full pose,
computing in float64 and float32 (the float32 verdict re-checked in float64 at the configured tolerances); a seed
is lane 0's start and wins ties.
"""

# ruff: noqa: N806  (math notation: T pose)

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
import torch

if TYPE_CHECKING:
    from so101_skillgen.ik import BatchedIK, IKConfig
    from so101_skillgen.kinematics import ArmKinematics

pytestmark = pytest.mark.slow  # the interpreter runs the kernel's Python for every iteration

POS_TOL = 1e-3  # m
ANG_TOL = math.radians(2.0)


PARTS = ("kernel", "solves")
"""The checks in two processes run side by side, each about half of the interpreter's kernel iterations:
``kernel`` the step, the sphere check, bad input and the float32 kinematics; ``solves`` the other solves."""


def _solve(
    kin: ArmKinematics, kin_: ArmKinematics, check: BatchedIK, fused: bool, targets: torch.Tensor, partial: bool,
    c: IKConfig, seed: torch.Tensor | None = None,
) -> dict[str, float]:  # fmt: skip
    """A :class:`BatchedIK` solve with kinematics ``kin_`` (fused kernel or torch loop), judged in float64 with
    ``kin`` and the collision check of ``check``."""
    from so101_skillgen.ik import BatchedIK
    from so101_skillgen.ik.pose_error import pose_error

    from so101_skillgen import se3

    ik = BatchedIK(c, kin_)
    ik.fused = fused
    res = ik.solve(targets.to(kin_.dtype), None if seed is None else seed.to(kin_.dtype), partial_pose=partial)
    ok = res.success
    Tq = kin.fk(res.q.double())
    pe = (Tq[:, :3, 3] - targets[:, :3, 3]).norm(dim=-1)
    if partial:
        cos = (Tq[:, :3, 2] * targets[:, :3, 2]).sum(-1).clamp(-1, 1)
        ae = torch.acos(cos)
    else:
        ae = se3.rotation_error(targets[:, :3, :3], Tq[:, :3, :3]).norm(dim=-1)
    # the solver's own verdict re-checked in float64 at the configured tolerances
    _, pe64, re64 = pose_error(targets, Tq, kin.approach_axis, partial)
    within = (pe64 <= c.position_tolerance) & (re64 <= c.rotation_tolerance)
    return {
        "success": float(ok.double().mean()),
        "max_pe": float(pe[ok].max()) if bool(ok.any()) else 0.0,
        "max_ae": float(ae[ok].max()) if bool(ok.any()) else 0.0,
        "verdict_wrong": float((ok & ~within).sum()),
        "error_diff": float((res.position_error.double() - pe64).abs().max()),
        "collisions": float(check.self_collision(res.q.double()[ok]).sum()),
        "outside_limits": float(((res.q.double() < kin.lower - 1e-6) | (res.q.double() > kin.upper + 1e-6)).sum()),
        "iterations": float(res.iterations),
        "seed_distance": float((res.q.double() - seed).abs().max()) if seed is not None else 0.0,
    }


def _checks(part: str) -> dict[str, Any]:
    from so101_skillgen.ik import BatchedIK, IKError, load_ik_config
    from so101_skillgen.ik.fused import fused_params, fused_solve
    from so101_skillgen.kinematics import ArmKinematics

    torch.set_num_threads(1)
    kin = ArmKinematics.from_urdf()
    cfg = load_ik_config()
    cfg = dataclasses.replace(cfg, batched=dataclasses.replace(cfg.batched, seeds=8))
    f64 = dataclasses.replace(cfg, batched=dataclasses.replace(cfg.batched, fused_float32=False))
    torch_ik = BatchedIK(cfg, kin)
    q = kin.random_q(200, torch.Generator().manual_seed(7))
    hit = torch_ik.self_collision(q)
    T = kin.fk(q[~hit][:64])
    qs = q[~hit][:24]  # > ANALYTIC_SEED_MAX: the seed itself is lane 0's start (and padded lanes)
    out: dict[str, Any] = {"targets": len(T)}
    if part == "solves":
        out["partial_fused"] = _solve(kin, kin, torch_ik, True, T, True, f64)
        out["partial_torch"] = _solve(kin, kin, torch_ik, False, T, True, cfg)
        out["full_fused"] = _solve(kin, kin, torch_ik, True, T[:16], False, f64)
        out["partial_fused_f32"] = _solve(kin, kin, torch_ik, True, T, True, cfg)  # the default: float32 inside
        out["seeded_fused"] = _solve(kin, kin, torch_ik, True, T[:24], True, cfg, qs)
        return out
    assert part == "kernel", part
    kin32 = kin.to(dtype=torch.float32)
    out["partial_fused_f32_kinematics"] = _solve(kin, kin32, torch_ik, True, T[:32], True, cfg)

    # lane for lane against the torch step (float64, no collision term): lanes that converged stop in the
    # kernel, and so does a target with a converged seed, so compare the open lanes of targets still running
    n = 4
    step_cfg = dataclasses.replace(
        f64, batched=dataclasses.replace(f64.batched, iterations=n, check_every=1000, self_collision=False)
    )
    ref = BatchedIK(step_cfg, kin)
    q0 = ref._initial(len(T), None, 8)
    rep = T[:, None].expand(-1, 8, 4, 4).reshape(-1, 4, 4)
    for partial in (True, False):
        r = fused_solve(q0, T, fused_params(kin, step_cfg), step_cfg, partial, per_seed=True)
        assert r.seed_q is not None and r.seed_position_error is not None and r.seed_rotation_error is not None
        qt = q0.reshape(-1, 5)
        for _ in range(n):
            qt = ref._update(qt, rep, partial)[0]
        running = (r.steps == n)[:, None].expand(-1, 8)
        open_ = (r.seed_position_error > cfg.position_tolerance) | (r.seed_rotation_error > cfg.rotation_tolerance)
        lanes = (running & open_).reshape(-1)
        out[f"step_lanes_{partial}"] = int(lanes.sum())
        out[f"step_diff_{partial}"] = float((r.seed_q.reshape(-1, 5) - qt)[lanes].abs().max())
        out[f"steps_{partial}"] = int(r.steps.max())

    # the in-kernel sphere check against SphereModel: targets of colliding joints, lane 0 started there
    # (converged at once, colliding), and every converged lane of a full solve
    qc = q[hit][:16]
    Tc = kin.fk(qc)
    few = dataclasses.replace(f64, batched=dataclasses.replace(f64.batched, iterations=30))  # interpreter time
    rc = fused_solve(torch_ik._draws(len(qc), 8), Tc, fused_params(kin, few), few, True, qc, per_seed=True)
    assert rc.seed_free is not None and rc.seed_q is not None
    out["colliding_targets"] = len(qc)
    out["colliding_lane0_free"] = int(rc.seed_free[:, 0].sum())
    out["colliding_success_collides"] = int(torch_ik.self_collision(rc.q[rc.success]).sum())
    rf = fused_solve(torch_ik._draws(len(T), 8), T, fused_params(kin, few), few, True, per_seed=True)
    assert rf.seed_free is not None and rf.seed_q is not None and rf.seed_position_error is not None
    assert rf.seed_rotation_error is not None
    conv = (rf.seed_position_error <= cfg.position_tolerance) & (rf.seed_rotation_error <= cfg.rotation_tolerance)
    out["free_checked"] = int(conv.sum())
    out["free_mismatch"] = int((rf.seed_free[conv] == torch_ik.self_collision(rf.seed_q[conv])).sum())

    # bad input on the fused path (its finiteness check runs beside the kernel; before the closed-form seed of
    # ≤ 16 targets): the same clear errors
    fused_ik = BatchedIK(dataclasses.replace(cfg, batched=dataclasses.replace(cfg.batched, iterations=2)), kin)
    fused_ik.fused = True
    bad = T[:20].clone()
    bad[3, 0, 3] = math.nan
    seed_bad = qs[:20].clone()
    seed_bad[5, 2] = math.inf
    errors = []
    for args in ((bad, None), (T[:20], seed_bad), (bad[:4], None), (T[:4], seed_bad[:6][2:])):
        try:
            fused_ik.solve(*args)
            errors.append("")
        except IKError as exc:
            errors.append(str(exc))
    out["finite_errors"] = errors
    return out


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    env, pipe = {**os.environ, "TRITON_INTERPRET": "1"}, subprocess.PIPE
    args = [[sys.executable, __file__, part] for part in PARTS]
    procs = [subprocess.Popen(a, env=env, stdout=pipe, stderr=pipe, text=True) for a in args]  # side by side
    result: dict[str, Any] = {}
    try:
        for part, proc in zip(PARTS, procs, strict=True):
            stdout, stderr = proc.communicate(timeout=170)
            if proc.returncode != 0:
                pytest.fail(f"interpreter run ({part}) failed:\n{stderr[-3000:]}")
            result.update(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    return result


def test_fused_steps_match_the_torch_step(report: dict[str, Any]) -> None:
    assert report["steps_True"] == 4 and report["steps_False"] == 4
    assert report["step_lanes_True"] > 50 and report["step_lanes_False"] > 50
    assert report["step_diff_True"] < 1e-9
    assert report["step_diff_False"] < 1e-9


def test_fused_collision_check_matches_the_sphere_model(report: dict[str, Any]) -> None:
    assert report["colliding_targets"] >= 8
    assert report["colliding_lane0_free"] == 0  # converged at once, but colliding: not free
    assert report["colliding_success_collides"] == 0  # and never picked as a success
    assert report["free_checked"] > 48 and report["free_mismatch"] == 0


CASES = ["partial_fused", "full_fused", "partial_fused_f32", "partial_fused_f32_kinematics", "seeded_fused"]


@pytest.mark.parametrize("case", CASES)
def test_fused_solves_reach_the_targets(report: dict[str, Any], case: str) -> None:
    r = report[case]
    assert r["success"] >= 0.85, r  # 8 seeds only (the torch loop scores the same, see below)
    assert r["max_pe"] <= POS_TOL and r["max_ae"] <= ANG_TOL, r
    assert r["collisions"] == 0 and r["outside_limits"] == 0, r
    assert r["verdict_wrong"] == 0, r  # float32 inside too: a reported success holds in float64
    assert r["error_diff"] < 1e-5, r  # the reported error is the error at the returned joints
    assert r["iterations"] <= 100, r  # (≤ 16 targets start from the closed form: often 0)


def test_fused_seed_is_the_start_and_the_tie_breaker(report: dict[str, Any]) -> None:
    r = report["seeded_fused"]
    assert r["success"] == 1.0 and r["iterations"] == 0, r  # the seed solves its own target at once
    assert r["seed_distance"] < 1e-5, r  # and wins as the closest


def test_fused_path_rejects_non_finite_input(report: dict[str, Any]) -> None:
    assert report["finite_errors"] == ["target must be finite", "seed must be finite"] * 2  # many / few targets


def test_fused_success_matches_the_torch_loop(report: dict[str, Any]) -> None:
    assert report["partial_fused"]["iterations"] > 0  # 64 targets: random starts, no closed-form seed
    assert report["partial_fused"]["success"] >= report["partial_torch"]["success"] - 0.03
    assert report["partial_fused_f32"]["success"] >= report["partial_torch"]["success"] - 0.03


if __name__ == "__main__":
    print(json.dumps(_checks(sys.argv[1])))
