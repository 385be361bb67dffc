"""Backend selection (``$SO101_TRANSPORT``), and ``run_node``'s exit codes and bounded shutdown on both backends.

The selection tests make rclpy unimportable where they need its absence to be certain.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from nodegraph.testing.graph import GraphBackend
from nodegraph.transport.rclpy.node import RclpyNode
from nodegraph.transport.runtime import (
    ENV,
    BackendUnavailableError,
    backend_name,
    create_node,
    rclpy_available,
    run_node,
)
from nodegraph.transport.zenoh.node import ZenohNode

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


def start_node(*ros_args: str, script: str = NODE_SCRIPT, **env: str) -> subprocess.Popen[str]:
    """The node script as a process on the backend of ``$SO101_TRANSPORT`` (the test's ``graph_backend``)."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *ros_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
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


def test_create_node_builds_a_node_of_the_selected_backend(graph_backend: GraphBackend) -> None:
    node = create_node("probe", ["--ros-args", "-r", "__ns:=/arm", "-p", "rate:=30"])
    try:
        assert isinstance(node, ZenohNode if graph_backend.name == "zenoh" else RclpyNode)
        assert (node.name, node.namespace) == ("probe", "/arm")
        assert node.declare_parameter("rate", 1.0) == 30.0
    finally:
        node.shutdown()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_run_node_exits_0_on_a_signal_after_closing_the_logic(graph_backend: GraphBackend, signum: int) -> None:
    process = start_node("--ros-args", "-p", "rate:=30")
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == "ready probe 30.0", (line, process.poll())
    process.send_signal(signum)
    code, out, err = finish(process)
    assert code == 0, err[-2000:]
    assert out.split() == ["closed"]


def test_run_node_exits_1_with_a_logged_error_when_the_logic_fails(graph_backend: GraphBackend) -> None:
    code, out, err = finish(start_node("--ros-args", "-p", "mode:=fail"))
    assert code == 1
    assert "ready" not in out and "closed" not in out
    assert "[ERROR]" in err and "[probe]: failed to start: ValueError: mode 'fail' is not a valid mode" in err


def test_run_node_exits_1_on_bad_ros_arguments(graph_backend: GraphBackend) -> None:
    code, _out, err = finish(start_node("--ros-args", "--no-such-flag"))
    assert code == 1
    assert "cannot create node 'probe'" in err and "--no-such-flag" in err


# bounded shutdown: a node whose close() never returns still ends, at the deadline or at a second signal

STUCK_SCRIPT = """
import sys, threading
from nodegraph.transport.runtime import run_node

class Logic:
    def __init__(self, node):
        print("ready", flush=True)

    def close(self):
        print("closing", flush=True)
        threading.Event().wait()  # never returns

sys.exit(run_node(Logic, "stuck", sys.argv[1:]))
"""


def start_stuck_node(deadline_s: float) -> subprocess.Popen[str]:
    process = start_node(script=STUCK_SCRIPT, SO101_SHUTDOWN_DEADLINE_S=str(deadline_s))
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready", finish(process, 5.0)
    return process


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_hanging_shutdown_ends_at_the_deadline_with_the_stacks(graph_backend: GraphBackend, signum: int) -> None:
    process = start_stuck_node(deadline_s=2.0)
    process.send_signal(signum)
    code, out, err = finish(process, timeout_s=60.0)
    assert out.split() == ["closing"]
    assert code == 1, err[-2000:]
    assert "Timeout (0:00:02)!" in err and "in close" in err  # the stack names what hung


def test_a_second_signal_ends_a_hanging_shutdown_at_once(graph_backend: GraphBackend) -> None:
    process = start_stuck_node(deadline_s=3600.0)
    process.send_signal(signal.SIGINT)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "closing"
    process.send_signal(signal.SIGTERM)
    code, _out, err = finish(process, timeout_s=60.0)
    assert code == -signal.SIGTERM, err[-2000:]
    assert "in close" in err


def test_a_bad_deadline_setting_is_refused_at_startup(graph_backend: GraphBackend) -> None:
    code, out, err = finish(start_node(script=STUCK_SCRIPT, SO101_SHUTDOWN_DEADLINE_S="soon"))
    assert code != 0 and "ready" not in out
    assert "SO101_SHUTDOWN_DEADLINE_S='soon' must be a number of seconds > 0" in err


SIGNAL_IN_WAIT_SCRIPT = """
import os, signal, threading
from nodegraph.transport.shutdown import install_signal_handlers

stop = threading.Event()
install_signal_handlers(stop)
with stop._cond:  # what the main thread holds inside stop.wait(): the handler runs right here, on this thread
    os.kill(os.getpid(), signal.SIGINT)
print("set" if stop.wait(20.0) else "not set", flush=True)
"""


def test_a_signal_arriving_inside_event_wait_still_sets_the_event() -> None:
    """A handler calling Event.set() on the main thread deadlocks when the signal lands while that thread holds
    the event's lock (inside wait()); the signal here lands exactly there."""
    code, out, err = finish(start_node(script=SIGNAL_IN_WAIT_SCRIPT, SO101_SHUTDOWN_DEADLINE_S="60"), 30.0)
    assert (code, out.strip()) == (0, "set"), err[-2000:]
