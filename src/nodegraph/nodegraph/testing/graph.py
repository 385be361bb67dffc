"""Shared test fixtures of node graphs (imported by conftest.py files and tests; needs pytest): a real zenoh router
on a free loopback port, peer processes talking through it (:mod:`nodegraph.testing.peer`), a ROS domain of its
own for rclpy, and ``graph_backend``: the nodes of a test module on either backend (the module's tests run once
per backend)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodegraph.graph.api import Node
from nodegraph.launch.output import PrefixedOutput
from nodegraph.launch.process import ManagedProcess
from nodegraph.transport.runtime import ENV as TRANSPORT_ENV
from nodegraph.transport.zenoh.config import ENDPOINT_ENV, free_endpoint
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.router import RouterProcess

PEER = "nodegraph.testing.peer"
"""The peer's module, run with ``python -m``."""


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh endpoint for this test, exported to the test process and its children."""
    value = free_endpoint()
    monkeypatch.setenv(ENDPOINT_ENV, value)
    return value


@pytest.fixture
def router(endpoint: str) -> Iterator[RouterProcess]:
    with RouterProcess(endpoint) as process:
        yield process


@pytest.fixture
def context(router: RouterProcess) -> Iterator[Context]:
    """This process's zenoh context (fresh per test), connected to the router."""
    ctx = Context(router.endpoint)
    assert ctx.wait_for_router(10.0)
    yield ctx
    ctx.close()


class _Lines(PrefixedOutput):
    """A peer's output lines, kept in order for :meth:`Peer.wait_line` (not printed)."""

    def __init__(self) -> None:
        super().__init__(colour=False)
        self.queue: queue.Queue[str] = queue.Queue()

    def line(self, source: str, text: str) -> None:
        self.queue.put(text)


class Peer:
    """A peer process (:mod:`nodegraph.testing.peer`), supervised by :class:`ManagedProcess` (its own process
    group, SIGTERM when the test process dies); its stdout and stderr are read line by line."""

    def __init__(self, *args: str) -> None:
        self._lines = _Lines()
        self.process = ManagedProcess(
            PEER, [sys.executable, "-m", PEER, *args], {**os.environ, "PYTHONUNBUFFERED": "1"}, self._lines
        ).start()

    def wait_line(self, prefix: str, timeout_s: float = 20.0) -> str:
        """The next output line that starts with ``prefix`` (the lines before it are passed over)."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.queue.get(timeout=min(left, 0.1))
            except queue.Empty:
                if self.process.poll() is not None and self._lines.queue.empty():
                    self.process.finish_output()
                    if self._lines.queue.empty():
                        break
                continue
            if line.startswith(prefix):
                return line.strip()
        raise AssertionError(f"peer never printed {prefix!r}; output: {self.output_tail()}")

    def output_tail(self) -> str:
        """The last lines of the output of an exited peer."""
        return "<running>" if self.process.poll() is None else self.process.tail()

    def wait(self, timeout_s: float) -> int:
        """The exit code (``subprocess.TimeoutExpired`` after ``timeout_s``)."""
        return self.process.wait(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> int:
        self.process.signal(signal.SIGINT)
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("peer did not stop on SIGINT") from None

    def kill(self) -> None:
        """SIGKILL, and wait for it to be gone."""
        self.process.signal(signal.SIGKILL)
        self.process.wait()
        self.process.finish_output()


@pytest.fixture
def peers() -> Iterator[list[Peer]]:
    """Start peers with ``peers.append(Peer(...))``; all are stopped after the test."""
    started: list[Peer] = []
    yield started
    for peer in started:
        peer.kill()


# ROS domains. Several engineers and CI run tests on one host at once: each rclpy test module takes a domain no
# other process holds (a lock file per id), and discovery stays on this host.

ROS_DOMAINS = range(1, 233)  # Fast DDS' valid ids with the default port mapping; 0 is left to people
DOMAIN_LOCKS = Path(tempfile.gettempdir()) / "so101-ros-domains"


@contextlib.contextmanager
def reserved_ros_domain() -> Iterator[int]:
    """A ROS_DOMAIN_ID held by no other process of this host while the block runs (released on exit or crash)."""
    DOMAIN_LOCKS.mkdir(mode=0o1777, exist_ok=True)
    start = random.randrange(len(ROS_DOMAINS))
    for offset in range(len(ROS_DOMAINS)):
        domain = ROS_DOMAINS[(start + offset) % len(ROS_DOMAINS)]
        lock = open(DOMAIN_LOCKS / f"{domain}.lock", "a")  # noqa: SIM115 (held for the block)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        try:
            yield domain
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
        return
    raise RuntimeError(f"every ROS domain in {ROS_DOMAINS} is held by another test process")


def ros_environment(domain: int) -> dict[str, str]:
    """The environment of rclpy processes in ``domain``, discovering peers on this host only, over UDP loopback:
    Fast DDS's shared-memory transport leaves its port files in /dev/shm when a process is killed (a test that
    times out, a CI job cut short), and a later participant of a reused domain meets them."""
    return {"ROS_DOMAIN_ID": str(domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
            "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4"}  # fmt: skip


def _close_context(context: Any) -> None:
    """Shut an rclpy context down and destroy it now, in this thread (its nodes' threads have ended), rather
    than whenever the garbage collector frees its DDS participant."""
    context.try_shutdown()
    context.destroy()


# Both backends.

BACKENDS = ("zenoh", "rclpy")


class GraphBackend:
    """The nodes of a test on one backend. ``node()`` makes one: on zenoh each on a session of its own to the
    router, on rclpy each on a context (DDS participant) of its own, so the wire between them is real. ``env``
    is what node processes started by the test need (already in ``os.environ`` while the fixture lives)."""

    def __init__(self, name: str, env: dict[str, str], domain: int | None = None) -> None:
        self.name = name
        self.env = env
        self.domain = domain
        self._nodes: list[Any] = []
        self._closers: list[Callable[[], None]] = []

    def node(
        self,
        name: str,
        *,
        namespace: str = "",
        parameter_overrides: dict[str, Any] | None = None,
        args: list[str] | None = None,
        **options: Any,
    ) -> Node:
        """A node named ``name`` on this backend (``options``: ``enable_rosout``, ``start_parameter_services``)."""
        node: Any
        if self.name == "zenoh":
            from nodegraph.transport.zenoh.node import ZenohNode

            session = Context(self.env[ENDPOINT_ENV])
            self._closers.append(session.close)
            assert session.wait_for_router(10.0), "no zenoh router"
            node = ZenohNode(name, namespace=namespace, args=args or [], parameter_overrides=parameter_overrides,
                             context=session, **options)  # fmt: skip
        else:
            import rclpy

            from nodegraph.transport.rclpy.node import RclpyNode

            context = rclpy.Context()
            rclpy.init(args=[], context=context, domain_id=self.domain)
            self._closers.append(functools.partial(_close_context, context))
            node = RclpyNode(name, namespace=namespace, args=args or [], parameter_overrides=parameter_overrides,
                             context=context, **options)  # fmt: skip
        self._nodes.append(node)
        return node

    def close(self) -> None:
        """Shut every node down, then close their sessions/contexts."""
        for node in reversed(self._nodes):
            node.shutdown()
        for close in reversed(self._closers):
            close()
        self._nodes.clear()
        self._closers.clear()


@contextlib.contextmanager
def graph_backend_for(name: str) -> Iterator[GraphBackend]:
    """Set up ``name``'s graph (a router, or a reserved ROS domain), exported to this process and its children."""
    with pytest.MonkeyPatch.context() as patch:
        if name == "zenoh":
            endpoint = free_endpoint()
            env = {TRANSPORT_ENV: "zenoh", ENDPOINT_ENV: endpoint}
            for key, value in env.items():
                patch.setenv(key, value)
            with RouterProcess(endpoint):
                backend = GraphBackend(name, env)
                try:
                    yield backend
                finally:
                    backend.close()
            return
        try:
            import rclpy  # noqa: F401
        except ImportError as exc:
            raise AssertionError(f"the rclpy backend is part of the suite: rclpy does not import ({exc}); "
                                 "run scripts/setup") from exc  # fmt: skip
        with reserved_ros_domain() as domain:
            env = {TRANSPORT_ENV: "rclpy", **ros_environment(domain)}
            for key, value in env.items():
                patch.setenv(key, value)
            backend = GraphBackend(name, env, domain)
            try:
                yield backend
            finally:
                backend.close()


@pytest.fixture(scope="module", params=BACKENDS)
def graph_backend(request: pytest.FixtureRequest) -> Iterator[GraphBackend]:
    """The module's graph on each backend in turn (tests are reported as ``test_x[zenoh]``, ``test_x[rclpy]``)."""
    with graph_backend_for(request.param) as backend:
        yield backend


@pytest.fixture(params=BACKENDS)
def own_graph_backend(request: pytest.FixtureRequest) -> Iterator[GraphBackend]:
    """A graph of the test's own (a fresh router or ROS domain), on each backend in turn."""
    with graph_backend_for(request.param) as backend:
        yield backend


def byte_value(field: int | bytes) -> int:
    """A ``byte`` field (``DiagnosticStatus.level``) as an int: rclpy holds it as one byte, zenoh as an int."""
    return field[0] if isinstance(field, bytes) else int(field)
