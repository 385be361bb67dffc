"""The radians ↔ LeRobot units mapping: round trip, known points, shape errors."""

import numpy as np
import pytest
from so101_core.lerobot_units import GRIPPER_RANGE_RAD, LEROBOT_JOINT_NAMES, from_lerobot, to_lerobot


def test_round_trip_over_random_joint_values() -> None:
    rng = np.random.default_rng(0)
    q = rng.uniform(-2.5, 2.5, size=(100, 6))
    np.testing.assert_allclose(from_lerobot(to_lerobot(q)), q, atol=1e-12)


def test_known_points() -> None:
    lower, upper = GRIPPER_RANGE_RAD
    v = to_lerobot([np.pi / 2, -np.pi / 4, 0.0, 0.0, np.pi, lower])
    np.testing.assert_allclose(v[:5], [90.0, -45.0, 0.0, 0.0, 180.0])
    assert v[5] == pytest.approx(0.0)
    assert to_lerobot([0, 0, 0, 0, 0, upper])[5] == pytest.approx(100.0)
    assert LEROBOT_JOINT_NAMES[0] == "shoulder_pan.pos" and LEROBOT_JOINT_NAMES[5] == "gripper.pos"


def test_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match="expected"):
        to_lerobot(np.zeros(5))
    with pytest.raises(ValueError, match="expected"):
        from_lerobot(np.zeros((3, 7)))
