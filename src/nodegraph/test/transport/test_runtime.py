"""Backend selection (``$SO101_TRANSPORT``) and ``run_node``'s exit codes, on the zenoh backend.

The rclpy backend cannot run here (no ROS 2); these tests make rclpy unimportable where they need its
absence to be certain, so they hold in a sourced ROS 2 environment too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from nodegraph.transport.runtime import (
    ENV,
    BackendUnavailableError,
    backend_name,
    create_node,
    rclpy_available,
    run_node,
)
from nodegraph.transport.zenoh.node import ZenohNode
from nodegraph.transport.zenoh.router import RouterProcess

# A node process: parameter ``mode:=fail`` makes its logic raise at construction, as a bad parameter would.
NODE_SCRIPT = """
import sys
from nodegraph.transport.runtime import run_node

class Logic:
    def __init__(self, node):
        if node.declare_parameter("mode", "ok") == "fail":
            raise ValueError("mode 'fail' is not a valid mode")
        print(f"ready {node.name} {node.declare_parameter('rate', 1.0)!r}", flush=True)

    def close(self):
        print("closed", flush=True)

sys.exit(run_node(Logic, "probe", sys.argv[1:]))
"""


@pytest.fixture
def no_rclpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import rclpy`` fail in this process, whatever is installed."""
    monkeypatch.setitem(sys.modules, "rclpy", None)


def start_node(*ros_args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", NODE_SCRIPT, *ros_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, ENV: "zenoh", "PYTHONUNBUFFERED": "1"},
    )


def finish(process: subprocess.Popen[str], timeout_s: float = 20.0) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"node process did not exit; stderr: {err[-2000:]}") from None
    return process.returncode, out, err


# selection


@pytest.mark.usefixtures("no_rclpy")
@pytest.mark.parametrize("value", [None, "", "auto", " AUTO "])
def test_auto_is_the_default_and_picks_zenoh_without_rclpy(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, value)
    assert not rclpy_available()
    assert backend_name() == "zenoh"


def test_auto_follows_whether_rclpy_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "auto")
    assert backend_name() == ("rclpy" if rclpy_available() else "zenoh")


def test_zenoh_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "zenoh")
    assert backend_name() == "zenoh"


@pytest.mark.usefixtures("no_rclpy")
def test_rclpy_asked_for_without_rclpy_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "rclpy")
    message = r"SO101_TRANSPORT=rclpy, but rclpy does not import .*source a ROS 2 Jazzy environment"
    with pytest.raises(BackendUnavailableError, match=message):
        backend_name()
    with pytest.raises(BackendUnavailableError, match=message):
        create_node("probe")
    assert run_node(lambda node: None, "probe", []) == 1


@pytest.mark.parametrize("value", ["dds", "ros2", "zenoh,rclpy"])
def test_an_unknown_backend_is_an_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV, value)
    with pytest.raises(ValueError, match=rf"{ENV}='{value}' is not a transport backend; use one of zenoh, rclpy, auto"):
        backend_name()
    with pytest.raises(ValueError, match="is not a transport backend"):
        create_node("probe")


# nodes


def test_create_node_builds_a_zenoh_node(monkeypatch: pytest.MonkeyPatch, router: RouterProcess) -> None:
    monkeypatch.setenv(ENV, "zenoh")
    node = create_node("probe", ["--ros-args", "-r", "__ns:=/arm", "-p", "rate:=30"])
    try:
        assert isinstance(node, ZenohNode)
        assert (node.name, node.namespace) == ("probe", "/arm")
        assert node.declare_parameter("rate", 1.0) == 30.0
    finally:
        node.shutdown()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_run_node_exits_0_on_a_signal_after_closing_the_logic(router: RouterProcess, signum: int) -> None:
    process = start_node("--ros-args", "-p", "rate:=30")
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == "ready probe 30.0", (line, process.poll())
    process.send_signal(signum)
    code, out, err = finish(process)
    assert code == 0, err[-2000:]
    assert out.split() == ["closed"]


def test_run_node_exits_1_with_a_logged_error_when_the_logic_fails(router: RouterProcess) -> None:
    code, out, err = finish(start_node("--ros-args", "-p", "mode:=fail"))
    assert code == 1
    assert "ready" not in out and "closed" not in out
    assert "[ERROR]" in err and "[probe]: failed to start: ValueError: mode 'fail' is not a valid mode" in err


def test_run_node_exits_1_on_bad_ros_arguments(router: RouterProcess) -> None:
    code, _out, err = finish(start_node("--ros-args", "--no-such-flag"))
    assert code == 1
    assert "cannot create node 'probe'" in err and "--no-such-flag" in err
