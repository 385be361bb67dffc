"""Helpers for the tests of node graphs, shipped with the runtime so that every package's tests share them:
:func:`wait_until` here; pytest fixtures, peer processes and both backends in :mod:`nodegraph.testing.graph`
(which imports pytest); the peer process itself in :mod:`nodegraph.testing.peer`; a test's own ``/clock`` in
:mod:`nodegraph.testing.clock`; a recording stand-in of ROS 2's ``launch``/``launch_ros`` in
:mod:`nodegraph.testing.ros_launch`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_until[T](
    predicate: Callable[[], T], timeout_s: float = 10.0, what: str = "condition", period_s: float = 0.02
) -> T:
    """``predicate()``'s first truthy value, polled every ``period_s`` s; AssertionError naming ``what`` when none
    comes within ``timeout_s`` s. No timing is asserted: the timeout only bounds a wait that should succeed."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        time.sleep(period_s)


def bag_messages_on_disk(bag: Path) -> int:
    """Messages that a bag being recorded at ``bag`` has on disk: the count of its metadata.yaml, which the writer
    rewrites at each sync; 0 before the first."""
    from nodegraph.bag.errors import BagFormatError
    from nodegraph.bag.metadata import read_metadata

    try:
        return int(read_metadata(bag)["message_count"])
    except BagFormatError:
        return 0
