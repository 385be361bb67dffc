"""Metrics and chunk blending, checked numerically against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from so101_policy.blending import Plan, blend
from so101_policy.metrics import (
    action_errors,
    aggregate,
    ate,
    dtw,
    frame_metrics,
    ndtw,
    path_length,
    path_smoothness,
    releases_by_outcome,
    rte,
    success_by_target_slot,
    wilson_interval,
)


def test_wilson_interval_matches_known_values() -> None:
    iv = wilson_interval(8, 10)  # textbook: 0.490 .. 0.943
    assert iv.low == pytest.approx(0.4902, abs=1e-3) and iv.high == pytest.approx(0.9433, abs=1e-3)
    zero = wilson_interval(0, 50)
    assert zero.low == 0.0 and zero.high == pytest.approx(0.0714, abs=1e-3)
    assert wilson_interval(50, 50).high == 1.0
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_success_by_target_slot_counts_each_slots_episodes() -> None:
    rows = [
        {"target_slot": 8, "success": False},
        {"target_slot": 6, "success": True},
        {"target_slot": 8, "success": True},
        {"target_slot": 8, "success": False},
        {"target_slot": -1, "success": True},  # no target (several vials): not a slot's episode
        {"success": True},
    ]
    table = success_by_target_slot(rows)
    assert list(table) == ["6", "8"]
    assert table["8"]["episodes"] == 3 and table["8"]["successes"] == 1
    assert table["8"]["success_rate"] == pytest.approx(1 / 3)
    iv = wilson_interval(1, 3)
    assert table["8"]["wilson_95"] == [iv.low, iv.high]
    assert table["6"] == {
        "episodes": 1,
        "successes": 1,
        "success_rate": 1.0,
        "wilson_95": [wilson_interval(1, 1).low, 1.0],
    }
    assert success_by_target_slot([]) == {}


def test_releases_are_summarised_per_outcome() -> None:
    def row(success: bool, failure: str | None, offset: float | None, height: float) -> dict:
        let_go = None if offset is None else {"target_offset_mm": offset, "height_mm": height, "tilt_deg": 0.0}
        return {"success": success, "failure": failure, "release_placement": let_go}

    rows = [row(True, None, 4.0, 64.0), row(True, None, 6.0, 66.0), row(True, None, 8.0, 65.0)]
    rows += [row(False, "released outside a slot", o, 90.0) for o in (10.0, 20.0, 30.0, 40.0)]
    rows += [row(False, "never grasped the vial", None, 10.0), {"success": False, "failure": "no twin steps recorded"}]
    out = releases_by_outcome(rows)
    assert list(out) == ["released outside a slot", "success"]  # most episodes first; no release: not listed
    assert out["success"] == {
        "episodes": 3, "offset_mm_p50": 6.0, "offset_mm_p90": 7.6, "height_mm_p50": 65.0, "height_mm_p90": 65.8,
    }  # fmt: skip
    assert out["released outside a slot"]["offset_mm_p50"] == 25.0 and out["released outside a slot"]["episodes"] == 4


def test_path_metrics() -> None:
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    assert path_length(square) == 3.0
    # second differences: (0,1)-(1,0) = (-1,1), (-1,0)-(0,1) = (-1,-1): both sqrt(2), over L-2 = 2
    assert path_smoothness(square) == pytest.approx(math.sqrt(2))
    assert path_smoothness(np.linspace(0, 1, 10)[:, None]) == pytest.approx(0.0, abs=1e-12)


def test_dtw_ate_rte() -> None:
    r = np.array([[0.0], [1.0], [2.0]])
    p = np.array([[0.0], [0.0], [1.0], [2.0]])  # a delayed copy: DTW warps it away
    assert dtw(p, r) == 0.0 and ndtw(p, r) == 1.0
    q = r + 0.5
    assert dtw(q, r) == pytest.approx(1.5)  # diagonal, 0.5 each
    assert ndtw(q, r) == pytest.approx(math.exp(-1.5 / (3 * 1.0)))
    assert ate(q, r) == pytest.approx(0.5)
    assert rte(q, r) == pytest.approx(0.0)  # same increments
    assert rte(np.array([[0.0], [2.0], [4.0]]), r) == pytest.approx(1.0)


def test_action_errors_and_frame_keys() -> None:
    cmd = np.zeros((5, 6))
    obs = np.zeros((5, 6))
    obs[:, 5] = 0.3  # the gripper stopped on something
    mse, per_joint = action_errors(cmd, obs)
    assert mse == pytest.approx(0.09) and per_joint[5] == pytest.approx(0.09) and per_joint[:5].sum() == 0
    m = frame_metrics(obs, cmd, reference_q=obs, reference_actions=cmd)
    assert m["gripper_mse"] == pytest.approx(0.09) and m["action_mse"] == 0.0 and m["ate"] == 0.0
    assert m["ndtw"] == 1.0
    agg = aggregate([{"a": 1.0}, {"a": 3.0, "b": 2.0}])
    assert agg == {"a": 2.0, "b": 2.0}


def test_blend_is_an_ema_over_the_overlap_and_drops_the_past() -> None:
    old = Plan(np.zeros((8, 6)), start=0)
    chunk = np.ones((16, 6))
    plan = blend(old, chunk, chunk_start=4, now=6, horizon=8, alpha=0.2)
    # horizon 8 of the chunk covers steps 4..11; steps 4, 5 are past at now=6
    assert plan.start == 6 and len(plan.actions) == 6
    np.testing.assert_allclose(plan.actions[:2], 0.2)  # steps 6, 7 overlap the old plan: 0.2*1 + 0.8*0
    np.testing.assert_allclose(plan.actions[2:], 1.0)  # steps 8..11 only in the new chunk
    assert plan.at(7) is not None and plan.at(12) is None and plan.remaining(10) == 2
    assert len(blend(None, chunk, 0, now=20, horizon=8, alpha=0.2).actions) == 0
    first = blend(None, chunk, 0, now=0, horizon=8, alpha=0.2)
    np.testing.assert_allclose(first.actions, 1.0)
    with pytest.raises(ValueError):
        blend(None, chunk, 0, 0, 8, alpha=0.0)


def test_exact_mcnemar_p_is_the_two_sided_binomial_test_of_the_discordant_pairs() -> None:
    from so101_policy.metrics import exact_mcnemar_p

    assert exact_mcnemar_p(0, 5) == exact_mcnemar_p(5, 0) == pytest.approx(2 / 32)
    assert exact_mcnemar_p(45, 45) == exact_mcnemar_p(0, 0) == 1.0
    assert exact_mcnemar_p(69, 33) == pytest.approx(0.000469, abs=1e-6)  # 1,200 against 600 demos (session 15)
    assert exact_mcnemar_p(3, 1) == 0.625  # 2 * (1 + 4) / 16
    with pytest.raises(ValueError):
        exact_mcnemar_p(-1, 2)


def test_two_evaluations_are_paired_by_scene_seed() -> None:
    """Scenes both ran are paired whatever their order; a scene only one ran is left out; both rules counted."""
    from so101_policy.metrics import paired_comparison

    def row(seed: int, ok: bool, shop: bool) -> dict:  # type: ignore[type-arg]
        return {"seed": seed, "success": ok, "workshop_success": shop}

    a = [row(1, True, True), row(2, False, True), row(3, True, True), row(9, True, True)]
    b = [row(3, False, True), row(2, True, True), row(1, True, False), row(7, False, False)]
    got = paired_comparison(a, b)
    assert got["same_scenes"] == 3
    assert got["success"] == {"a_successes": 2, "b_successes": 2, "only_a": 1, "only_b": 1, "exact_mcnemar_p": 1.0}
    assert got["workshop_success"] == {
        "a_successes": 3, "b_successes": 2, "only_a": 1, "only_b": 0, "exact_mcnemar_p": 1.0,
    }  # fmt: skip
    with pytest.raises(ValueError, match="evaluation B runs a scene seed more than once"):
        paired_comparison(a, [*b, row(2, False, False)])
