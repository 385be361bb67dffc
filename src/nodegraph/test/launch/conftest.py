"""Fixtures of the launch tests (helpers live in ``launch_test_support``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from launch_test_support import RunnerProcess
from nodegraph.transport.zenoh.config import free_endpoint


@pytest.fixture
def endpoint() -> str:
    """A loopback endpoint on a free port (one per test, so tests never share a router)."""
    return free_endpoint()


@pytest.fixture
def run_fixture() -> Iterator[type[RunnerProcess]]:
    """Factory of ``RunnerProcess``; anything left running is killed at teardown."""
    started: list[RunnerProcess] = []

    class Tracked(RunnerProcess):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            started.append(self)

    yield Tracked
    for runner in started:
        runner.kill_all()
