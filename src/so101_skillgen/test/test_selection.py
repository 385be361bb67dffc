"""kNN source selection on object poses."""

from __future__ import annotations

import numpy as np
import pytest
from so101_skillgen.errors import SelectionError
from so101_skillgen.frames import axis_frame, object_frame
from so101_skillgen.selection import nearest, pose_distance, select_source


def _frame(x: float, y: float, yaw: float = 0.0) -> np.ndarray:
    t = np.eye(4)
    c, s = np.cos(yaw), np.sin(yaw)
    t[:3, :3] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
    t[:3, 3] = [x, y, 0.0]
    return t


CANDIDATES = [_frame(0.30, 0.0), _frame(0.20, 0.0), _frame(0.21, 0.01), _frame(0.25, 0.0), _frame(0.10, 0.1)]


def test_nearest_orders_by_distance() -> None:
    assert nearest(CANDIDATES, _frame(0.205, 0.0), 3, 0.0) == [1, 2, 3]
    assert nearest(CANDIDATES, _frame(0.31, 0.0), 1, 0.0) == [0]
    assert nearest(CANDIDATES, _frame(0.0, 0.0), 10, 0.0) == [4, 1, 2, 3, 0]


def test_rotation_weight_counts_the_angle() -> None:
    cands = [_frame(0.2, 0.0, yaw=1.0), _frame(0.22, 0.0, yaw=0.0)]
    assert nearest(cands, _frame(0.2, 0.0), 1, 0.0) == [0]
    assert nearest(cands, _frame(0.2, 0.0), 1, 0.1) == [1]  # 1 rad · 0.1 m/rad > 2 cm
    assert pose_distance(cands[0], _frame(0.2, 0.0), 0.1) == pytest.approx(0.1)


def test_select_draws_among_the_k_nearest_reproducibly() -> None:
    query = _frame(0.205, 0.0)
    picks = {select_source(CANDIDATES, query, 3, 0.0, np.random.default_rng(s))[0] for s in range(50)}
    assert picks == {1, 2, 3}
    a = [select_source(CANDIDATES, query, 3, 0.0, np.random.default_rng(7))[0] for _ in range(3)]
    assert len(set(a)) == 1
    chosen, near = select_source(CANDIDATES, query, 1, 0.0, np.random.default_rng(0))
    assert chosen == 1 and near == [1]


def test_empty_candidates_is_a_clear_error() -> None:
    with pytest.raises(SelectionError, match="no source seeds"):
        nearest([], _frame(0, 0), 3, 0.0)


def test_symmetric_frame_ignores_roll_about_the_axis() -> None:
    # a lying vial rolled about its own axis gives the same selection/retargeting frame
    from so101_core.sim.scene import vial_lying_quat

    a = object_frame(np.array([0.2, 0.0, 0.01, *vial_lying_quat(2.8, 0.0)]), symmetric=True)
    b = object_frame(np.array([0.2, 0.0, 0.01, *vial_lying_quat(2.8, 0.3)]), symmetric=True)
    np.testing.assert_allclose(a, b, atol=1e-12)
    c0 = object_frame(np.array([0.2, 0.0, 0.01, *vial_lying_quat(2.8, 0.0)]), symmetric=False)
    c1 = object_frame(np.array([0.2, 0.0, 0.01, *vial_lying_quat(2.8, 0.3)]), symmetric=False)
    assert pose_distance(c0, c1, 1.0) == pytest.approx(0.3, abs=1e-9)
    np.testing.assert_allclose(axis_frame(np.zeros(3), np.array([0, 0, 1.0]))[:3, :3], np.eye(3))
