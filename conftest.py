"""Workspace-wide pytest hooks and fixtures for ``pytest -n N --dist loadscope`` (scripts/test).

Each test module is one work unit, so a module-scoped fixture is built once, by one worker. On the workers, tests
marked ``slow`` come first: no long run starts last while the other workers sit idle (a plain ``pytest`` keeps
the collection order). Tests that start a local Ray instance take :func:`one_ray_instance`.

Transports: node processes of a test run on zenoh (``SO101_TRANSPORT=zenoh``) unless the test picks a backend;
``graph_backend`` (``nodegraph.testing.graph``) runs a module's tests on zenoh and on rclpy (``own_graph_backend``: a
test's own graph on each). Every test process holds a ROS
domain of its own with discovery on this host only, so that no test joins a graph of another run."""

from __future__ import annotations

import contextlib
import faulthandler
import fcntl
import hashlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from nodegraph.testing.graph import graph_backend, own_graph_backend, reserved_ros_domain, ros_environment
from nodegraph.transport.runtime import ENV as TRANSPORT_ENV

__all__ = ["graph_backend", "own_graph_backend"]  # the fixtures, for every test module


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike (a stable sort)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


WATCHDOG_GRACE_S = 60.0
"""Seconds past a test phase's pytest-timeout after which the C-level watchdog ends the worker."""
EXIT_LIMIT_S = 120
"""Seconds a worker may take to exit after its last test (atexit handlers, transports closing) before the kernel
ends it (SIGALRM's default action)."""


def _timeout_s(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    return float(marker.args[0]) if marker is not None and marker.args else float(item.config.getini("timeout"))


def _session_root(config: pytest.Config) -> Path:
    """The session's base temp folder, shared by the controller and its workers."""
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return base.parent if base.name.startswith("popen-gw") else base


def _watchdog_log(item: pytest.Item) -> Path:
    """Where a worker's watchdog writes the stacks (fd 2 is captured mid-test)."""
    return _session_root(item.config) / f"watchdog-{os.getpid()}.log"


def _running_mark(item: pytest.Item) -> Path:
    """A file that exists while the item runs: one left behind names a test whose process died under it."""
    folder = _session_root(item.config) / "running"
    folder.mkdir(exist_ok=True)
    return folder / hashlib.sha1(item.nodeid.encode()).hexdigest()


@contextlib.contextmanager
def _watchdog(item: pytest.Item) -> Iterator[None]:
    """End a test process stuck where no Python thread can run (a C call holding the GIL: pytest-timeout's timer
    thread cannot fire then): faulthandler's own thread writes every thread's stack to :func:`_watchdog_log` and
    exits, so xdist reports the test as crashed and starts a new worker instead of the run hanging until CI's
    limit. Armed per phase (setup, call, teardown), so a module-scoped fixture stuck in its setup is covered too."""
    timeout = _timeout_s(item)
    if timeout <= 0:
        yield
        return
    with open(_watchdog_log(item), "w") as log:  # a worker's log holds its current phase alone
        log.write(f"== {item.nodeid}\n")
        log.flush()
        faulthandler.dump_traceback_later(timeout + WATCHDOG_GRACE_S, exit=True, file=log)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()


_CRASHED_BEFORE = pytest.StashKey[bool]()
"""Set on an item whose running mark was left by a worker that died under it."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    mark = _running_mark(item)
    crashed_before = mark.exists()
    mark.write_text(item.nodeid)
    item.stash[_CRASHED_BEFORE] = crashed_before
    result = yield
    mark.unlink(missing_ok=True)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    if item.stash.get(_CRASHED_BEFORE, False):
        # xdist puts a crashed worker's test back in the queue: run it once, not until the restarts run out
        pytest.fail("this test's worker process died while running it (see above): not run again", pytrace=False)
    with _watchdog(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _watchdog(item):
        return (yield)


REALTIME_BY_DESIGN = ("Watchdog Confir", "Watchdog Valida")
"""Thread names (15 characters) of zenoh's shared-memory watchdogs, real-time by zenoh's design: short periodic
tasks that sleep between runs."""


def _leave_realtime() -> list[str]:
    """When this worker's main thread runs under a real-time policy (SCHED_FIFO / SCHED_RR), which every thread it
    starts inherits, put it and the threads that inherited it back to SCHED_OTHER; returns them as ``"name (tid)"``.
    A library that raised the caller to real-time priority when run as root (PyAV's SVT-AV1 encoder did) left a
    worker whose busy threads starved everything else on the host, its watchdog too."""
    realtime = (os.SCHED_FIFO, os.SCHED_RR)
    if os.sched_getscheduler(0) not in realtime:
        return []
    found = []
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError, ValueError):
            tid, name = int(task.name), (task / "comm").read_text().strip()
            if os.sched_getscheduler(tid) in realtime and name not in REALTIME_BY_DESIGN:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                found.append(f"{name} ({tid})")
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    with _watchdog(item):
        result = yield
    if leaked := _leave_realtime():
        threads = ", ".join(leaked[:5]) + (", ..." if len(leaked) > 5 else "")
        pytest.fail(f"the test left the worker in real-time scheduling: {threads} (reset)", pytrace=False)
    return result


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # a worker that hangs on its way out would hold the whole run
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(EXIT_LIMIT_S)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print what a watchdog caught (stacks of a worker it ended), on the controller."""
    if hasattr(config, "workerinput"):
        return
    for log in sorted(_session_root(config).glob("watchdog-*.log")):
        text = log.read_text()
        if "most recent call first" in text:
            terminalreporter.section(f"watchdog: a stuck test process ({log.name})")
            terminalreporter.write(text)


@pytest.fixture
def one_ray_instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Holds a lock shared by the session's workers while the test runs: never two local Ray instances at once."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base  # a worker's basetemp lies in the session's
    with open(root / "ray.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(autouse=True, scope="session")
def _graph_isolation() -> Iterator[None]:
    """Node processes default to zenoh (the backend the tests were written for), and anything on rclpy stays in
    this process's own ROS domain on this host."""
    with reserved_ros_domain() as domain, pytest.MonkeyPatch.context() as patch:
        patch.setenv(TRANSPORT_ENV, "zenoh")
        for key, value in ros_environment(domain).items():
            patch.setenv(key, value)
        yield


@pytest.fixture
def stack() -> Iterator[contextlib.ExitStack]:
    """An ExitStack closed after the test: what a test starts (nodes, contexts, servers) is pushed on it and torn
    down in reverse order, also when the test fails."""
    with contextlib.ExitStack() as s:
        yield s
