"""``launched``: a description started for a program that drives the graph itself (the evaluator's way), with
real node processes (the fixture scripts) and a real zenoh router; every node and the router are gone after it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from launch_test_support import wait_gone
from nodegraph.launch.description import LaunchDescriptionData, NodeEntry
from nodegraph.launch.errors import LaunchArgumentError, ProcessFailedError
from nodegraph.launch.executables import ScriptResolver
from nodegraph.launch.runner import RunnerOptions, launched
from nodegraph.transport.zenoh.config import endpoint_accepts_connections

pytestmark = pytest.mark.timeout(60)
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GRAPH = LaunchDescriptionData(
    "pair",
    "a talker with a parameter and one that exits",
    nodes=(
        NodeEntry("fixtures", "talker", "alpha", parameters=({"rate": 30},)),
        NodeEntry("fixtures", "exiter", "quitter", arguments=("3",)),
    ),
)


def test_nodes_run_while_the_block_lasts_with_their_logs_and_environment(tmp_path: Path, endpoint: str) -> None:
    stream = io.StringIO()
    options = RunnerOptions(
        endpoint=endpoint, resolver=ScriptResolver(FIXTURES), log_dir=tmp_path, env={"EXTRA": "1"}, stream=stream
    )
    with launched(GRAPH, (), options) as graph:
        alpha = graph.process("alpha")
        alpha.wait_for_line("argv=", 20.0)
        assert endpoint_accepts_connections(endpoint)  # the runner's own router
        assert b"\0EXTRA=1\0" in Path(f"/proc/{alpha.pid}/environ").read_bytes()
        with pytest.raises(ProcessFailedError):
            graph.process("quitter").wait_for_line("never printed", 20.0)
        assert graph.process("quitter").poll() == 3 and alpha.alive()
        with pytest.raises(KeyError):
            graph.process("nobody")
        pids = [alpha.pid]
    log = (tmp_path / "alpha.log").read_text()
    assert f"endpoint={endpoint}" in log and "argv=--ros-args -r __node:=alpha -p rate:=30" in log
    assert "bye" in log  # stopped through its own SIGINT handling
    assert not wait_gone(pids) and not endpoint_accepts_connections(endpoint)
    assert "[alpha]" not in stream.getvalue()  # node output goes to the logs, the launcher's lines to the stream
    assert "started /alpha" in stream.getvalue()


def test_bad_arguments_start_nothing(endpoint: str) -> None:
    options = RunnerOptions(endpoint=endpoint, resolver=ScriptResolver(FIXTURES))
    with pytest.raises(LaunchArgumentError), launched(GRAPH, ("nope:=1",), options):
        pass
    assert not endpoint_accepts_connections(endpoint)
