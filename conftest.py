"""Workspace-wide pytest hooks and fixtures for ``pytest -n N --dist loadscope`` (scripts/test).

Each test module is one work unit, so a module-scoped fixture is built once, by one worker. On the workers, tests
marked ``slow`` come first: no long run starts last while the other workers sit idle (a plain ``pytest`` keeps
the collection order). Tests that start a local Ray instance take :func:`one_ray_instance`.

Transports: node processes of a test run on zenoh (``SO101_TRANSPORT=zenoh``) unless the test picks a backend;
``graph_backend`` (``graph_testing``) runs a module's tests on zenoh and on rclpy (``own_graph_backend``: a
test's own graph on each). Every test process holds a ROS
domain of its own with discovery on this host only, so that no test joins a graph of another run."""

from __future__ import annotations

import faulthandler
import fcntl
from collections.abc import Iterator

import pytest
from graph_testing import graph_backend, own_graph_backend, reserved_ros_domain, ros_environment
from nodegraph.transport.runtime import ENV as TRANSPORT_ENV

__all__ = ["graph_backend", "own_graph_backend"]  # the fixtures, for every test module


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike (a stable sort)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


WATCHDOG_GRACE_S = 60.0
"""Seconds past a test's pytest-timeout after which the C-level watchdog ends the worker."""


@pytest.fixture(autouse=True)
def _stuck_test_watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    """End a test process stuck where no Python thread can run (a C call holding the GIL: pytest-timeout's timer
    thread cannot fire then): faulthandler's own thread dumps every thread's stack and exits, so xdist reports
    the test as crashed and starts a new worker instead of the run hanging until CI's limit."""
    marker = request.node.get_closest_marker("timeout")
    timeout = float(marker.args[0]) if marker is not None and marker.args else float(request.config.getini("timeout"))
    if timeout > 0:
        faulthandler.dump_traceback_later(timeout + WATCHDOG_GRACE_S, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


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
