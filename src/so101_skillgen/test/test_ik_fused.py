"""The fused Triton IK kernel (so101_skillgen.ik.fused) on the CPU through Triton's interpreter.

The interpreter must be chosen before the kernel is defined, so the checks run in a subprocess with
``TRITON_INTERPRET=1`` (this file as a script) and report JSON; the tests assert on it. Checked: a few
iterations agree lane for lane with the torch step (float64, no collision term in either), and full solves
through :class:`BatchedIK` with the fused loop reach the targets (FK: 1 mm / 2°), as often as the torch
loop, free of self-collision and within the limits, for partial and full pose, in float64 and float32.
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
from typing import Any

import pytest
import torch

POS_TOL = 1e-3  # m
ANG_TOL = math.radians(2.0)


def _checks() -> dict[str, Any]:
    from so101_skillgen.ik import BatchedIK, load_ik_config
    from so101_skillgen.ik.fused import fused_params, fused_solve
    from so101_skillgen.kinematics import ArmKinematics

    from so101_skillgen import se3

    torch.set_num_threads(1)
    kin = ArmKinematics.from_urdf()
    cfg = load_ik_config()
    cfg = dataclasses.replace(cfg, batched=dataclasses.replace(cfg.batched, seeds=8))
    torch_ik = BatchedIK(cfg, kin)
    q = kin.random_q(200, torch.Generator().manual_seed(7))
    T = kin.fk(q[~torch_ik.self_collision(q)][:64])
    out: dict[str, Any] = {"targets": len(T)}

    # lane for lane against the torch step (lanes that converged stop in the kernel: compare the others)
    n = 4
    step_cfg = dataclasses.replace(
        cfg, batched=dataclasses.replace(cfg.batched, iterations=n, check_every=1000, self_collision=False)
    )
    ref = BatchedIK(step_cfg, kin)
    q0 = ref._initial(len(T), None, 8)
    rep = T[:, None].expand(-1, 8, 4, 4).reshape(-1, 4, 4)
    for partial in (True, False):
        qk, pe, re, origins, steps = fused_solve(q0, T, fused_params(kin, step_cfg), step_cfg, partial)
        frames = kin.link_frames(qk)
        out[f"origins_diff_{partial}"] = float((origins - frames[..., :3, 3]).abs().max())
        qt = q0.reshape(-1, 5)
        for _ in range(n):
            qt = ref._update(qt, rep, partial)[0]
        moving = ((pe > cfg.position_tolerance) | (re > cfg.rotation_tolerance)).reshape(-1)
        out[f"step_diff_{partial}"] = float((qk.reshape(-1, 5) - qt)[moving].abs().max())
        out[f"steps_{partial}"] = int(steps.max())

    def solve(kin_: ArmKinematics, fused: bool, targets: torch.Tensor, partial: bool) -> dict[str, float]:
        ik = BatchedIK(cfg, kin_)
        ik.fused = fused
        res = ik.solve(targets.to(kin_.dtype), partial_pose=partial)
        ok = res.success
        Tq = kin.fk(res.q.double())
        pe = (Tq[:, :3, 3] - targets[:, :3, 3]).norm(dim=-1)
        if partial:
            cos = (Tq[:, :3, 2] * targets[:, :3, 2]).sum(-1).clamp(-1, 1)
            ae = torch.acos(cos)
        else:
            ae = se3.rotation_error(targets[:, :3, :3], Tq[:, :3, :3]).norm(dim=-1)
        return {
            "success": float(ok.double().mean()),
            "max_pe": float(pe[ok].max()) if bool(ok.any()) else 0.0,
            "max_ae": float(ae[ok].max()) if bool(ok.any()) else 0.0,
            "collisions": float(torch_ik.self_collision(res.q.double()[ok]).sum()),
            "outside_limits": float(((res.q.double() < kin.lower - 1e-6) | (res.q.double() > kin.upper + 1e-6)).sum()),
        }

    out["partial_fused"] = solve(kin, True, T, True)
    out["partial_torch"] = solve(kin, False, T, True)
    out["full_fused"] = solve(kin, True, T[:16], False)
    out["partial_fused_f32"] = solve(kin.to(dtype=torch.float32), True, T[:32], True)
    return out


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=170, check=False)
    if proc.returncode != 0:
        pytest.fail(f"interpreter run failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_fused_steps_match_the_torch_step(report: dict[str, Any]) -> None:
    assert report["steps_True"] == 4 and report["steps_False"] == 4
    assert report["step_diff_True"] < 1e-9
    assert report["step_diff_False"] < 1e-9
    assert report["origins_diff_True"] < 1e-12 and report["origins_diff_False"] < 1e-12


@pytest.mark.parametrize("case", ["partial_fused", "full_fused", "partial_fused_f32"])
def test_fused_solves_reach_the_targets(report: dict[str, Any], case: str) -> None:
    r = report[case]
    assert r["success"] >= 0.85, r  # 8 seeds only (the torch loop scores the same, see below)
    assert r["max_pe"] <= POS_TOL and r["max_ae"] <= ANG_TOL, r
    assert r["collisions"] == 0 and r["outside_limits"] == 0, r


def test_fused_success_matches_the_torch_loop(report: dict[str, Any]) -> None:
    assert report["partial_fused"]["success"] >= report["partial_torch"]["success"] - 0.03


if __name__ == "__main__":
    print(json.dumps(_checks()))
