"""The /skillgen/generate action server as its own process, driven by this process on both backends (through a
real zenoh router; rclpy over DDS): bad goals aborted with the field named, feedback, a second goal rejected,
cancel within one attempt, resume."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nodegraph.graph.api import GoalStatus, Node
from nodegraph.testing.graph import GraphBackend
from so101_core.seeds.format import save_seed
from so101_core.seeds.from_rollout import scripted_seeds
from so101_core.sim.twin import Twin

ACTION = "so101_msgs/action/GenerateDemos"
SUCCEEDED, CANCELED, ABORTED = GoalStatus.SUCCEEDED, GoalStatus.CANCELED, GoalStatus.ABORTED


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seeds")
    for i, s in enumerate(scripted_seeds(Twin(), list(range(300, 308)))[:4]):
        save_seed(s, root / f"seed_{i}.npz")
    return root


@pytest.fixture(scope="module")
def graph(graph_backend: GraphBackend) -> Iterator[tuple[Node, subprocess.Popen[str]]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the backend's (graph_backend exported it)
    proc = subprocess.Popen(
        [sys.executable, "-m", "so101_skillgen.skillgen_node"], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = graph_backend.node("skillgen_test_client")
    try:
        yield client, proc
    finally:
        client.shutdown()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _goal(client: Node, **fields: Any) -> Any:
    base = {"seeds_dir": "", "task": "", "num_demos": 3, "max_attempts": 0, "random_seed": 0, "render": False,
            "output_dir": ""}  # fmt: skip
    return client.message(f"{ACTION}_Goal", **{**base, **fields})


Graph = tuple[Node, subprocess.Popen[str]]


def test_generate_action_end_to_end(graph: Graph, seed_dir: Path, tmp_path: Path) -> None:
    client, proc = graph
    action = client.create_action_client(ACTION, "skillgen/generate")
    assert action.wait_for_server(60.0), "the skillgen node never served skillgen/generate"
    out = tmp_path / "demos"

    # bad goals: accepted, aborted at once, the field named in the result
    for fields, name in (
        ({"seeds_dir": str(tmp_path / "nowhere"), "output_dir": str(out)}, "goal.seeds_dir"),
        ({"seeds_dir": str(seed_dir), "output_dir": str(out), "num_demos": 0}, "goal.num_demos"),
        ({"seeds_dir": str(seed_dir), "output_dir": str(out), "task": "pour_coffee"}, "goal.task"),
        # a task.yaml variant is loaded (its scene, expert layout, success rule): single-vial seeds do not fit it
        ({"seeds_dir": str(seed_dir), "output_dir": str(out), "task": "multi_vial"}, "variant 'multi_vial'"),
    ):
        status, result = action.send_goal(_goal(client, **fields)).result(60.0)
        assert status == ABORTED and name in result.message, (name, result.message)
    assert not out.exists() or not list(out.glob("demo_*.npz"))

    # a long goal: feedback arrives, a second goal is rejected, cancel stops within one attempt
    feedback: list[Any] = []
    first = threading.Event()

    def on_feedback(msg: Any) -> None:
        feedback.append(msg)
        if msg.attempted >= 1:
            first.set()

    goal = _goal(client, seeds_dir=str(seed_dir), output_dir=str(out), num_demos=40)
    running = action.send_goal(goal, on_feedback)
    assert running.accepted
    assert first.wait(120.0), "no feedback after an attempt"
    second = action.send_goal(_goal(client, seeds_dir=str(seed_dir), output_dir=str(tmp_path / "other")))
    assert not second.accepted  # one goal at a time
    at_cancel = max(f.attempted for f in feedback)
    assert running.cancel(10.0)
    status, result = running.result(120.0)
    assert status == CANCELED and "resume" in result.message
    assert result.attempted <= at_cancel + 2  # the attempt in flight, at most one more committed
    kept_partial = len(list(out.glob("demo_*.npz")))
    assert kept_partial == result.succeeded < 40
    assert all(f.stage in ("loading", "generating", "done") for f in feedback)

    # the same goal with a smaller target resumes the partial output and completes it
    target = kept_partial + 2
    status, result = action.send_goal(_goal(client, seeds_dir=str(seed_dir), output_dir=str(out),
                                            num_demos=target)).result(180.0)  # fmt: skip
    assert status == SUCCEEDED, result.message
    assert result.succeeded == target == len(list(out.glob("demo_*.npz")))
    assert result.attempted >= at_cancel and 0 < result.success_rate <= 1 and result.dataset_path == str(out)
    assert proc.poll() is None  # the server is still up


def test_feedback_keeps_coming_at_least_once_a_second(graph: Graph, seed_dir: Path, tmp_path: Path) -> None:
    client, _ = graph
    action = client.create_action_client(ACTION, "skillgen/generate")
    assert action.wait_for_server(60.0)
    stamps: list[float] = []
    goal = _goal(client, seeds_dir=str(seed_dir), output_dir=str(tmp_path / "fb"), num_demos=4)
    status, _ = action.send_goal(goal, lambda msg: stamps.append(time.monotonic())).result(180.0)
    assert status == SUCCEEDED and len(stamps) >= 4
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert max(gaps) < 1.5  # the 1 Hz timer fills the time between attempts (a margin for a loaded machine)
