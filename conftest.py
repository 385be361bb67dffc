"""Workspace-wide pytest hooks and fixtures for ``pytest -n N --dist loadscope`` (scripts/test).

Each test module is one work unit, so a module-scoped fixture is built once, by one worker. On the workers, tests
marked ``slow`` come first: no long run starts last while the other workers sit idle (a plain ``pytest`` keeps
the collection order). Tests that start a local Ray instance take :func:`one_ray_instance`."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike (a stable sort)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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
