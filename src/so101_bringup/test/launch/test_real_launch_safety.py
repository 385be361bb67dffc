"""The real launch carries the safety settings of issue 13: the shutdown behaviour and the leader's calibration."""

from __future__ import annotations

from so101_bringup.launch.descriptions.real import DESCRIPTION as REAL
from so101_bringup.launch.resolve import resolve_launch


def test_real_launch_sets_the_shutdown_and_the_leader_calibration() -> None:
    resolved = resolve_launch(REAL, ["shutdown:=hold", "teleop:=true", "leader_calibration:=/tmp/leader.json"])
    nodes = {n.name: n for n in resolved.nodes}
    assert nodes["driver"].parameters[0]["shutdown"] == "hold"
    assert nodes["leader"].parameters[0]["calibration"] == "/tmp/leader.json"
    default = {n.name: n for n in resolve_launch(REAL, []).nodes}
    assert default["driver"].parameters[0]["shutdown"] == ""  # "" = robot.yaml's robot.follower.shutdown
