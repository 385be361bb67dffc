"""``so101 bag`` under faults and playback: a recorder killed with SIGKILL, and play → echo."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from nodegraph.bag import read_messages
from nodegraph.interfaces.messages import deserialize
from nodegraph.testing import bag_messages_on_disk, wait_until
from nodegraph.testing.graph import Peer

SO101 = [sys.executable, "-m", "so101_cli.main"]


def record_joint_states(bag: Path, count: int, peers: list[Peer]) -> subprocess.Popen[str]:
    """Start ``so101 bag record /joint_states`` and a peer publishing ``count`` messages; returns the recorder."""
    recorder = subprocess.Popen([*SO101, "bag", "record", "/joint_states", "-o", str(bag)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    peers.append(Peer("joint_states", str(count)))  # it publishes once the recorder has subscribed
    assert peers[-1].wait(60) == 0
    return recorder


def test_recorder_killed_with_sigkill_leaves_a_readable_bag(router: object, peers: list[Peer], tmp_path: Path) -> None:
    bag = tmp_path / "killed"
    recorder = record_joint_states(bag, 60, peers)
    wait_until(lambda: bag_messages_on_disk(bag) >= 60, 30.0, "all 60 messages on disk")  # synced each second
    recorder.kill()
    recorder.wait(timeout=10)

    recovered = subprocess.run([*SO101, "bag", "recover", str(bag)], capture_output=True, text=True, timeout=60)
    assert recovered.returncode == 0, recovered.stderr
    messages = list(read_messages(bag))
    assert len(messages) == 60
    positions = [deserialize(m.cdr, m.type_name).position[0] for m in messages]
    assert positions == sorted(positions)
    info = subprocess.run([*SO101, "bag", "info", str(bag)], capture_output=True, text=True, timeout=60)
    assert "Count: 60" in info.stdout


def test_bag_play_republishes_in_order_with_the_recorded_timing(
    router: object, peers: list[Peer], tmp_path: Path
) -> None:
    bag = tmp_path / "played"
    recorder = record_joint_states(bag, 30, peers)
    wait_until(lambda: bag_messages_on_disk(bag) >= 30, 30.0, "all 30 messages recorded")
    recorder.send_signal(signal.SIGINT)
    assert recorder.wait(timeout=30) == 0

    listener = Peer("listen")
    peers.append(listener)
    listener.wait_line("READY")
    started = time.monotonic()
    played = subprocess.run([*SO101, "bag", "play", str(bag)], capture_output=True, text=True, timeout=60,
                            env=os.environ.copy())  # fmt: skip
    elapsed = time.monotonic() - started
    assert played.returncode == 0, played.stderr
    assert "published 30 messages" in played.stdout
    lines = [listener.wait_line("GOT", 10.0) for _ in range(30)]
    assert [float(line.split()[1]) for line in lines] == [round(i * 0.1, 1) for i in range(30)]
    recorded_span = 29 * 0.02  # the peer publishes every 20 ms; playback keeps that spacing
    assert elapsed >= recorded_span
