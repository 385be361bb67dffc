"""How a chunk enters the plan (so101_policy.admission): clamped into the range, refused only for NaN / inf, a
gross excursion or a first-step jump, in the rows that will execute; a refusal keeps the plan."""

from __future__ import annotations

import numpy as np
import pytest
from so101_policy.admission import ChunkLimits, admit_chunk
from so101_policy.blending import Plan, blend
from so101_policy.config import PolicyNodeConfig

LIMITS = ChunkLimits(np.full(6, -1.0), np.full(6, 1.0), 0.5, np.full(5, 0.3))
HOME = np.zeros(6)


def chunk(n: int = 16) -> np.ndarray:
    out = np.zeros((n, 6))
    out[:, 0] = 0.01 * np.arange(n)  # a slow ramp on joint 0
    return out


def test_values_just_outside_the_range_are_clamped_and_counted() -> None:
    c = chunk()
    c[6:15, 1] = -1.052  # 0.052 rad beyond: issue 23's overshoot on shoulder_lift
    result = admit_chunk(None, c, 0, 0, 16, 0.2, LIMITS, HOME)
    assert result.refused == "" and result.clamped == 9 and result.rows == 16
    assert result.plan is not None and result.plan.actions[6:15, 1].tolist() == [-1.0] * 9
    expected = c.copy()
    expected[6:15, 1] = -1.0
    assert np.array_equal(result.plan.actions, blend(None, expected, 0, 0, 16, 0.2).actions)


def test_refusals_keep_the_plan_and_name_the_cause() -> None:
    old = Plan(chunk(), 0)
    cases = {
        "NaN/inf actions (elbow_flex at t=3)": (3, 2, np.nan),
        "out of range: shoulder_lift = -1.600 rad at t=4, 0.600 rad beyond its limit (max 0.5)": (4, 1, -1.6),
        "starts 0.400 rad from the last command on shoulder_pan (max 0.3)": (0, 0, 0.4),
    }
    for text, (t, j, value) in cases.items():
        c = chunk()
        c[t, j] = value
        result = admit_chunk(old, c, 0, 0, 16, 0.2, LIMITS, HOME)
        assert text in result.refused and result.plan is old and result.clamped == 0


def test_only_the_rows_that_execute_are_checked() -> None:
    c = chunk(40)
    c[10, 2] = np.nan  # beyond the horizon of 8
    c[20, 1] = 7.0
    c[0, 0] = np.inf  # row 0 is for step 5, already past at step 6
    result = admit_chunk(None, c, 5, 6, 8, 0.2, LIMITS, HOME)
    assert result.refused == "" and result.rows == 7 and result.plan is not None
    assert result.plan.start == 6 and np.array_equal(result.plan.actions, c[1:8])
    late = admit_chunk(result.plan, c, 5, 13, 8, 0.2, LIMITS, HOME)  # all 8 rows past: the plan stays
    assert late.rows == 0 and late.refused == "" and late.plan is result.plan


def test_limits_from_the_config() -> None:
    limits = ChunkLimits.from_config(PolicyNodeConfig(max_excursion_rad=0.25))
    assert limits.max_excursion_rad == 0.25 and limits.lower[1] == pytest.approx(-1.74533)
    assert limits.max_step_rad.tolist() == [0.5, 0.5, 0.5, 0.5, 1.2]
