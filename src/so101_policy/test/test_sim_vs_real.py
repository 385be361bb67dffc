"""The sim-vs-real table from real rollouts in rosbag2 bags (written with the project's bag writer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from nodegraph.bag.metadata import qos_profile_yaml
from nodegraph.bag.writer import BagWriter
from nodegraph.interfaces.messages import make, serialize
from so101_core.robot_spec import JOINT_NAMES
from so101_policy.errors import ConfigError
from so101_policy.report import sim_vs_real_html
from so101_policy.sim_vs_real import read_rollout, sim_vs_real_rows

JS = "sensor_msgs/msg/JointState"


def write_rollout(path: Path, gripper_stuck: float) -> None:
    """20 joint states; commands lead them, the gripper's command is ``gripper_stuck`` rad below its state."""
    with BagWriter(path) as writer:
        writer.add_topic("/joint_states", JS, qos_profile_yaml())
        writer.add_topic("/joint_commands", JS, qos_profile_yaml())
        for k in range(20):
            q = np.full(6, 0.01 * k)
            cmd = q + 0.01
            cmd[5] = q[5] - gripper_stuck
            for topic, values, dt in (("/joint_commands", cmd, 0), ("/joint_states", q, 1000)):
                msg = make(JS, name=list(JOINT_NAMES), position=values)
                assert writer.write(topic, 10**9 + k * 33_000_000 + dt, serialize(msg, JS))


def test_rows_from_bags_and_labels(tmp_path: Path) -> None:
    write_rollout(tmp_path / "real_0", gripper_stuck=0.3)  # closed on the vial
    write_rollout(tmp_path / "real_1", gripper_stuck=0.0)  # never grasped
    (tmp_path / "before.json").write_text(json.dumps({"success_rate": 0.8}))
    table = tmp_path / "real.yaml"
    table.write_text(
        "conditions:\n"
        "  - name: sim-only\n    sim_results: before.json\n"
        "    real:\n      - {bag: real_0, success: true}\n      - {bag: real_1, success: false}\n"
        "  - name: '+10 real demos'\n    sim_results: this\n    real:\n      - {bag: real_0, success: true}\n"
    )
    r = read_rollout(tmp_path / "real_0")
    assert r["q"].shape == (20, 6) and r["cmd"].shape == (20, 6) and r["t"][0] == 0.0
    np.testing.assert_allclose(r["cmd"][:, 5] - r["q"][:, 5], -0.3)
    rows = sim_vs_real_rows(table, {"success_rate": 0.75})
    assert [row["condition"] for row in rows] == ["sim-only", "+10 real demos"]
    assert rows[0]["sim"] == 0.8 and rows[0]["real"] == 0.5 and rows[0]["real_episodes"] == 2
    assert rows[1]["sim"] == 0.75 and rows[1]["real"] == 1.0
    assert rows[0]["real_metrics"]["gripper_mse"] == pytest.approx((0.09 + 0.0) / 2)
    html = sim_vs_real_html(rows)
    assert "sim-only" in html and "30%" in html and "-25%" in html  # gaps: 0.8 - 0.5, 0.75 - 1.0
    table.write_text("conditions:\n  - name: x\n    real:\n      - {bag: real_0}\n")
    with pytest.raises(ConfigError, match="success: true"):
        sim_vs_real_rows(table)
