"""The real launch carries the safety settings of issue 13: the shutdown behaviour and the leader's calibration."""

from __future__ import annotations

import pytest
from nodegraph.launch.errors import LaunchArgumentError
from nodegraph.launch.resolve import resolve_launch
from so101_bringup.launch.descriptions.real import DESCRIPTION as REAL


def test_real_launch_sets_the_shutdown_and_the_leader_calibration() -> None:
    resolved = resolve_launch(REAL, ["shutdown:=hold", "teleop:=true", "leader_calibration:=/tmp/leader.json"])
    nodes = {n.name: n for n in resolved.nodes}
    assert nodes["driver"].parameters[0]["shutdown"] == "hold"
    assert nodes["leader"].parameters[0]["calibration"] == "/tmp/leader.json"
    default = {n.name: n for n in resolve_launch(REAL, []).nodes}
    assert default["driver"].parameters[0]["shutdown"] == ""  # "" = robot.yaml's robot.follower.shutdown


def test_real_launch_takes_the_same_cameras_argument_as_sim() -> None:
    """Defect 10 of issue 13: ``so101 launch real 'cameras:=[]'`` was refused."""
    names = lambda argv: {n.name for n in resolve_launch(REAL, argv).nodes}  # noqa: E731
    assert {"ego_camera", "side_camera", "top_camera"} <= names([])
    assert not any(n.endswith("_camera") for n in names(["cameras:=[]"]))
    assert {n for n in names(["cameras:=[side]"]) if n.endswith("_camera")} == {"side_camera"}
    with pytest.raises(LaunchArgumentError, match="YAML list"):
        resolve_launch(REAL, ["cameras:={a: 1}"])
