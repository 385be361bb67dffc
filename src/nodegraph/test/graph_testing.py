"""Shared test fixtures (imported by conftest.py files): a real zenoh router on a free loopback port, and
peer processes talking through it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nodegraph.transport.zenoh.config import ENDPOINT_ENV
from nodegraph.transport.zenoh.context import Context
from nodegraph.transport.zenoh.router import RouterProcess

PEER = Path(__file__).parent / "transport" / "peer.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh endpoint for this test, exported to the test process and its children."""
    value = f"tcp/127.0.0.1:{free_port()}"
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


class Peer:
    """A peer process (see peer.py)."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(PEER), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def wait_line(self, prefix: str, timeout_s: float = 20.0) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith(prefix):
                return line.strip()
            if not line and self.process.poll() is not None:
                break
        raise AssertionError(f"peer never printed {prefix!r}; stderr: {self.stderr_tail()}")

    def stderr_tail(self) -> str:
        if self.process.poll() is None:
            return "<running>"
        assert self.process.stderr is not None
        return self.process.stderr.read()[-2000:]

    def stop(self, timeout_s: float = 10.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("peer did not stop on SIGINT") from None


@pytest.fixture
def peers() -> Iterator[list[Peer]]:
    """Start peers with ``peers.append(Peer(...))``; all are stopped after the test."""
    started: list[Peer] = []
    yield started
    for peer in started:
        if peer.process.poll() is None:
            peer.process.kill()
            peer.process.wait()
