"""rclpy's process context (``rclpy.init`` once, ``try_shutdown`` after the last node), our signal handling
and waiting on rclpy futures off the executor."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import rclpy
from rclpy.signals import SignalHandlerOptions

from nodegraph.transport.shutdown import SHUTDOWN, install_signal_handlers

__all__ = ["PROCESS", "SHUTDOWN", "install_signal_handlers", "wait_future"]

_POLL_S = 0.05


def wait_future(future: Any, timeout_s: float | None) -> bool:
    """Wait (off the executor) for an rclpy future; True when done. Polls too, since the executor runs done
    callbacks as tasks, which may queue behind busy threads."""
    done = threading.Event()
    future.add_done_callback(lambda _future: done.set())
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not future.done():
        remaining = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
        if remaining <= 0:
            return False
        done.wait(remaining)
    return True


class _ProcessContext:
    """``rclpy.init`` once per process; ``rclpy.try_shutdown`` after the last node it was started for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._owned = False

    def acquire(self, args: list[str] | None) -> bool:
        """Count a node in; True when this call initialized rclpy (with ``args``, the process arguments)."""
        with self._lock:
            first = not rclpy.ok()
            if first:
                # rcl reads argv like a C main's: program name first
                argv = None if args is None else [sys.argv[0] if sys.argv else "so101", *args]
                rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
                self._owned = True
            self._users += 1
            return first

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._owned:
                self._owned = False
                rclpy.try_shutdown()


PROCESS = _ProcessContext()
