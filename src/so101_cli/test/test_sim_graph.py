"""The issue's reproduction, as a ROS user meets the twin: ``so101 launch sim 'cameras:=[]'`` on a real router,
then the CLI against it (a type-less echo used to deadlock; bag record -a used to miss the latched topics)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

SO101 = [sys.executable, "-m", "so101_cli.main"]


def run(*args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SO101, *args], capture_output=True, text=True, timeout=timeout_s, env=os.environ.copy())


def test_cli_and_bag_record_against_the_sim(router: object, tmp_path: Path) -> None:
    launch = subprocess.Popen([*SO101, "launch", "sim", "cameras:=[]", "--no-router"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=os.environ.copy())  # fmt: skip
    try:
        echo = run("topic", "echo", "/joint_states", "-n", "1", "--wait", "60", timeout_s=90)
        assert echo.returncode == 0, echo.stderr
        assert "shoulder_pan" in echo.stdout

        bag = tmp_path / "sim_bag"
        recorded = run("bag", "record", "-a", "-o", str(bag), "--duration", "3")
        assert recorded.returncode == 0, recorded.stderr
        meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        counts = {t["topic_metadata"]["name"]: t["message_count"] for t in meta["topics_with_message_count"]}
        assert counts["/tf_static"] == 1 and counts["/robot_description"] == 1
        assert counts["/joint_states"] > 10

        # read once at start: refused, not silently ignored
        refused = run("param", "set", "/robot_state_publisher", "publish_frequency", "5.0")
        assert refused.returncode == 1 and "read-only" in refused.stderr
        got = run("param", "get", "/robot_state_publisher", "publish_frequency")
        assert got.stdout.strip() == "Double value is: 20.0"
    finally:
        launch.send_signal(signal.SIGINT)
        try:
            launch.wait(timeout=30)
        except subprocess.TimeoutExpired:
            launch.kill()
            launch.wait()
    assert launch.returncode == 0
    time.sleep(0.1)
