"""Savitzky–Golay smoothing: arm joints only, gripper channel bit-identical."""

from __future__ import annotations

import numpy as np
import pytest
from so101_skillgen.errors import SkillGenConfigError
from so101_skillgen.smoothing import savgol, smooth_joints, smoothing_windows


def _trajectory(steps: int = 200) -> np.ndarray:
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 1.0, steps)
    arm = np.stack([np.sin(2 * np.pi * t * (k + 1) / 4) for k in range(5)], axis=1)
    grip = np.where((t > 0.3) & (t < 0.7), -0.17, 0.9)  # sharp close / open
    q = np.column_stack([arm, grip])
    q[:, :5] += rng.normal(0.0, 0.01, size=(steps, 5))
    q[:, 5] += rng.normal(0.0, 1e-7, size=steps)  # any bit pattern must pass through untouched
    return q


def test_gripper_channel_is_bit_identical() -> None:
    q = _trajectory()
    out = smooth_joints(q, 21, 3)
    assert out[:, 5].tobytes() == q[:, 5].tobytes()
    assert not np.array_equal(out[:, :5], q[:, :5])


def test_arm_noise_is_reduced() -> None:
    q = _trajectory()
    clean = _trajectory()
    clean[:, :5] -= np.random.default_rng(0).normal(0.0, 0.01, size=(200, 5))
    out = smooth_joints(q, 21, 3)
    assert np.abs(out[:, :5] - clean[:, :5]).std() < 0.6 * np.abs(q[:, :5] - clean[:, :5]).std()


def test_cubics_pass_through_exactly_including_edges() -> None:
    t = np.linspace(-1.0, 1.0, 60)
    y = np.column_stack([t**3 - 2 * t + 1, 0.5 * t**2])
    np.testing.assert_allclose(savgol(y, 21, 3), y, atol=1e-10)


def test_short_trajectories_use_a_smaller_window() -> None:
    q = _trajectory(9)
    out = smooth_joints(q, 21, 3)
    assert out.shape == q.shape and out[:, 5].tobytes() == q[:, 5].tobytes()
    tiny = _trajectory(3)
    np.testing.assert_array_equal(smooth_joints(tiny, 21, 3), tiny)


def test_bad_parameters_name_the_field() -> None:
    with pytest.raises(SkillGenConfigError, match=r"smoothing\.window"):
        savgol(np.zeros((30, 2)), 20, 3)
    with pytest.raises(SkillGenConfigError, match=r"smoothing\.order"):
        savgol(np.zeros((30, 2)), 5, 5)
    with pytest.raises(ValueError, match="joint trajectory"):
        smooth_joints(np.zeros((30, 5)))


def test_fallback_windows_narrow_to_the_commands_as_executed() -> None:
    assert smoothing_windows(21, 3) == [21, 11, 1]
    assert smoothing_windows(7, 3) == [7, 1]  # half of it (3) would not exceed the order
    q = np.random.default_rng(1).normal(size=(40, 6))
    assert np.array_equal(smooth_joints(q, 1, 3), q)
