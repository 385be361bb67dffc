"""``so101 launch`` without ROS: the real runner in a child process, real node processes (fixture scripts).

Every wait is bounded (the runner must be gone within 15 s); nothing asserts on how fast things happen.
"""

from __future__ import annotations

import io
import re
import signal

import pytest
from launch_test_support import RunnerProcess, wait_gone
from nodegraph.launch.description import LaunchArgument, LaunchDescriptionData
from nodegraph.launch.errors import LaunchError, UnknownLaunchError
from nodegraph.launch.output import PrefixedOutput
from nodegraph.launch.runner import launch_transport, run_launch
from nodegraph.transport.zenoh.config import endpoint_accepts_connections
from nodegraph.transport.zenoh.router import RouterProcess

pytestmark = pytest.mark.timeout(60)
READY = r"\] ready .*pid=(\d+)"


def test_three_nodes_stop_cleanly_on_sigint(run_fixture: type[RunnerProcess], endpoint: str) -> None:
    runner = run_fixture("three", "ns:=arm", "--endpoint", endpoint)
    ready = runner.wait_for(READY, count=3)
    router_pid = int(runner.wait_for(rf"started zenoh router on {endpoint} \[pid (\d+)\]")[0].group(1))
    node_pids = [int(m.group(1)) for m in ready]
    runner.wait_for(r"\] argv=", count=3)  # printed after the ready line
    out = runner.output()
    # Each node got its name, namespace, parameters, remappings and the router endpoint.
    assert "[alpha] argv=--ros-args -r __node:=alpha -r __ns:=/arm -p rate:=30" in out
    assert "[beta] argv=--ros-args -r __node:=beta -r chatter:=arm/chatter" in out
    assert len(re.findall(rf"endpoint={endpoint}$", out, re.M)) == 3

    runner.process.send_signal(signal.SIGINT)
    assert runner.wait() == 0
    assert not wait_gone([*node_pids, router_pid])
    assert runner.output().count("] bye") == 3  # each node shut down through its own SIGINT handler
    assert not endpoint_accepts_connections(endpoint)


def test_nodes_die_with_a_sigkilled_runner_and_speak_zenoh(
    run_fixture: type[RunnerProcess], endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PR_SET_PDEATHSIG: SIGKILL leaves the runner no chance to stop its nodes; they must go anyway. And the
    runner's nodes use zenoh even where ``auto`` would pick rclpy (a sourced ROS 2 shell)."""
    monkeypatch.setenv("SO101_TRANSPORT", "auto")
    runner = run_fixture("three", "ns:=arm", "--endpoint", endpoint)
    ready = runner.wait_for(READY, count=3)
    assert all("transport=zenoh " in m.string for m in ready)
    node_pids = [int(m.group(1)) for m in ready]
    runner.process.kill()
    runner.process.wait()
    assert not wait_gone(node_pids, timeout_s=30.0)  # each node gets SIGTERM and shuts down gracefully


def test_transport_rclpy_starts_no_router_and_its_nodes_speak_rclpy(
    run_fixture: type[RunnerProcess], endpoint: str
) -> None:
    runner = run_fixture("three", "--transport", "rclpy", "--endpoint", endpoint)
    ready = runner.wait_for(READY, count=3)
    assert all("transport=rclpy " in m.string for m in ready)
    out = runner.output()
    assert "nodes on rclpy (ROS_DOMAIN_ID=" in out and "no zenoh router" in out
    assert "started zenoh router" not in out and not endpoint_accepts_connections(endpoint)
    runner.process.send_signal(signal.SIGINT)
    assert runner.wait() == 0
    assert runner.output().count("] bye") == 3


@pytest.mark.parametrize(
    ("requested", "env", "expected"),
    [(None, None, "zenoh"), (None, "auto", "zenoh"), (None, "rclpy", "rclpy"), (None, " Zenoh ", "zenoh"),
     ("rclpy", "zenoh", "rclpy"), ("zenoh", "rclpy", "zenoh")],
)  # fmt: skip
def test_the_launch_transport_is_zenoh_unless_rclpy_is_asked_for(
    monkeypatch: pytest.MonkeyPatch, requested: str | None, env: str | None, expected: str
) -> None:
    if env is None:
        monkeypatch.delenv("SO101_TRANSPORT", raising=False)
    else:
        monkeypatch.setenv("SO101_TRANSPORT", env)
    assert launch_transport(requested) == expected


def test_an_unknown_launch_transport_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LaunchError, match=r"--transport='dds': a launch runs on zenoh or rclpy"):
        launch_transport("dds")
    monkeypatch.setenv("SO101_TRANSPORT", "ros2")
    with pytest.raises(LaunchError, match=r"SO101_TRANSPORT='ros2': a launch runs on zenoh or rclpy"):
        launch_transport()


def test_required_node_crash_stops_the_others(run_fixture: type[RunnerProcess]) -> None:
    runner = run_fixture("crash_required", "--no-router")
    assert runner.wait(15.0) == 3  # the crasher's exit code
    out = runner.output()
    assert "process has died: crasher" in out and "exit code 3" in out
    assert "required node crasher exited; shutting down" in out
    assert not wait_gone(runner.pids())


def test_optional_node_crash_is_reported_and_the_rest_go_on(run_fixture: type[RunnerProcess]) -> None:
    runner = run_fixture("crash_optional", "--no-router")
    runner.wait_for(r"process has died: crasher .*exit code 4")
    alpha = int(runner.wait_for(r"\[alpha\] ready .*pid=(\d+)")[0].group(1))
    assert runner.process.poll() is None and wait_gone([alpha], timeout_s=0.3) == [alpha]
    runner.process.send_signal(signal.SIGINT)
    assert runner.wait() == 0
    assert not wait_gone(runner.pids())


def test_nodes_that_finish_on_their_own_give_zero(run_fixture: type[RunnerProcess]) -> None:
    runner = run_fixture("finish", "--no-router")
    assert runner.wait() == 0
    assert "all nodes exited" in runner.output()


def test_sigterm_and_stubborn_nodes_escalate_to_sigkill(run_fixture: type[RunnerProcess]) -> None:
    runner = run_fixture("stubborn", "--no-router", "--grace", "1")
    pids = [int(m.group(1)) for m in runner.wait_for(READY, count=2)]
    runner.process.send_signal(signal.SIGTERM)
    assert runner.wait() == 0
    out = runner.output()
    assert "escalating to SIGKILL for: mule" in out
    assert "process stopped: mule" in out and "killed by SIGKILL" in out
    assert not wait_gone(pids)


def test_an_existing_router_is_reused(run_fixture: type[RunnerProcess], endpoint: str) -> None:
    with RouterProcess(endpoint) as router:
        runner = run_fixture("finish", "--endpoint", endpoint)
        assert runner.wait() == 0
        assert f"using the zenoh router already listening on {endpoint}" in runner.output()
        assert router.running  # the runner did not stop a router it did not start


def test_bad_arguments_exit_2_before_starting_anything(run_fixture: type[RunnerProcess]) -> None:
    runner = run_fixture("three", "nss:=arm", "--no-router")
    assert runner.wait() == 2
    assert "unknown argument 'nss' for launch 'three'; valid arguments: ns" in runner.output()
    assert "started" not in runner.output()


def test_run_launch_reports_unknown_launch_and_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    def lookup(name: str) -> LaunchDescriptionData:
        if name != "one":
            raise UnknownLaunchError(f"no launch named {name!r}; available: one")
        return LaunchDescriptionData("one", "a launch", (LaunchArgument("record", "false", choices=("true", "false")),))

    assert run_launch(lookup, "nope", []) == 2
    assert "no launch named 'nope'; available: one" in capsys.readouterr().err
    assert run_launch(lookup, "one", ["rate"]) == 2
    assert "launch arguments are name:=value, got 'rate'" in capsys.readouterr().err
    assert run_launch(lookup, "one", ["record:=maybe"]) == 2
    assert "'maybe' is not one of ['true', 'false']" in capsys.readouterr().err


def test_output_prefixes_and_colours() -> None:
    plain, coloured = io.StringIO(), io.StringIO()
    PrefixedOutput(plain, colour=False).line("alpha", "hello")
    out = PrefixedOutput(coloured, colour=True)
    out.line("alpha", "hello")
    out.line("beta", "hi")
    assert plain.getvalue() == "[alpha] hello\n"
    first, second = coloured.getvalue().splitlines()
    assert first.startswith("\x1b[") and first.endswith("[alpha]\x1b[0m hello")
    assert first.split("m", 1)[0] != second.split("m", 1)[0]  # a different colour per node
