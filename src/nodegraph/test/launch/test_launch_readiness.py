"""Readiness: a node declaring a ``ready_line`` holds back the nodes after it until it prints that line; exiting
first or not printing it in time ends the launch with an error naming the node. Real node processes (the fixture
scripts) on a real zenoh router; the times compared are the nodes' own ``time.monotonic()`` (one clock per host)."""

from __future__ import annotations

import io
import re
import signal
from pathlib import Path

import pytest
from launch_test_support import RunnerProcess, pid_alive, wait_gone
from nodegraph.launch.description import LaunchDescriptionData, NodeEntry
from nodegraph.launch.errors import ProcessFailedError
from nodegraph.launch.executables import ScriptResolver
from nodegraph.launch.runner import RunnerOptions, launched
from nodegraph.transport.zenoh.config import endpoint_accepts_connections

pytestmark = pytest.mark.timeout(60)
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def graph(server_args: tuple[str, ...], timeout_s: float = 30.0) -> LaunchDescriptionData:
    """A server that announces readiness (``announcer`` with ``server_args``) and a client started after it."""
    server = NodeEntry(
        "fixtures", "announcer", "server", arguments=server_args, ready_line="serving on", ready_timeout_s=timeout_s
    )
    client = NodeEntry("fixtures", "announcer", "client", arguments=("0", "up"))
    return LaunchDescriptionData("pair", "a server and its client", nodes=(server, client))


def options(endpoint: str, log_dir: Path, stream: io.StringIO) -> RunnerOptions:
    return RunnerOptions(endpoint=endpoint, resolver=ScriptResolver(FIXTURES), log_dir=log_dir, stream=stream)


def stamp(log: Path, prefix: str) -> float:
    match = re.search(rf"^{prefix}.* t=([0-9.]+)$", log.read_text(), re.M)
    assert match, log.read_text()
    return float(match.group(1))


def test_the_next_node_starts_once_the_ready_line_is_printed(tmp_path: Path, endpoint: str) -> None:
    stream = io.StringIO()
    with launched(graph(("1.5", "serving on")), (), options(endpoint, tmp_path, stream)) as launch:
        assert "serving on" in (tmp_path / "server.log").read_text()  # entered only once the server is ready
        launch.process("client").wait_for_line("up", 20.0)
        assert stamp(tmp_path / "client.log", "starting") >= stamp(tmp_path / "server.log", "serving on")
    said = stream.getvalue()
    assert said.index("/server is ready after") < said.index("started /client")


def test_a_node_that_exits_before_its_ready_line_ends_the_launch_naming_it(tmp_path: Path, endpoint: str) -> None:
    stream = io.StringIO()
    with (
        pytest.raises(ProcessFailedError) as failure,
        launched(graph(("0.2", "serving on", "3")), (), options(endpoint, tmp_path, stream)),
    ):
        pytest.fail("entered although the server never became ready")
    message = str(failure.value)
    assert message.startswith("launch 'pair': node server exited (exit code 3) before printing 'serving on'")
    assert f"(log: {tmp_path / 'server.log'})" in message and "\n    giving up with 3" in message
    assert not (tmp_path / "client.log").exists() and "started /client" not in stream.getvalue()
    assert not endpoint_accepts_connections(endpoint)  # the router stopped too


def test_a_node_that_does_not_print_its_ready_line_in_time_ends_the_launch(tmp_path: Path, endpoint: str) -> None:
    stream = io.StringIO()
    with (
        pytest.raises(ProcessFailedError, match=r"node server did not print 'serving on' within 1 s") as failure,
        launched(graph(("60", "serving on"), timeout_s=1.0), (), options(endpoint, tmp_path, stream)),
    ):
        pytest.fail("entered although the server never became ready")
    assert re.search(r"last output:\n    starting pid=\d+", str(failure.value))
    pid = int(re.findall(r"pid=(\d+)", str(failure.value))[0])
    assert not wait_gone([pid]) and not (tmp_path / "client.log").exists()


def test_so101_launch_reports_a_node_never_ready_and_exits_1(run_fixture: type[RunnerProcess], endpoint: str) -> None:
    runner = run_fixture("ready_crash", "--endpoint", endpoint)
    assert runner.wait() == 1
    out = runner.output()
    assert "node server exited (exit code 3) before printing 'serving on'" in out and "started /client" not in out


def test_ctrl_c_while_waiting_for_a_ready_line_stops_the_launch(
    run_fixture: type[RunnerProcess], endpoint: str
) -> None:
    runner = run_fixture("ready_slow", "--endpoint", endpoint)
    pid = int(runner.wait_for(r"\[server\] starting pid=(\d+)")[0].group(1))
    runner.process.send_signal(signal.SIGINT)
    assert runner.wait() == 0  # within the ready wait of 60 s
    assert not pid_alive(pid) and "started /client" not in runner.output()
