"""``NodeExecutor``: an rclpy executor that runs one callback group's callbacks in order on one thread, and the
rest on a thread pool.

The node interface promises subscriptions, services and timers one at a time (rclpy's single-threaded
executor), running goals concurrently, and callbacks that may wait for a service or action reply. rclpy's
``MultiThreadedExecutor`` gives the last two, but with a ``MutuallyExclusiveCallbackGroup`` it hands each ready
callback of the group to its pool, where all but one find the group busy and give it back; the executor is woken
and hands them out again while the one runs. On a loaded 2-core host that loop cost JointState at 100 Hz a p99
of 130-340 ms (8 threads; 1-7 ms single-threaded), and dropped messages. Here the serial group's callbacks go to
one thread of their own, in the order they became ready, so none is handed out before the previous one ended;
the others (goal execution, replies to our clients, the node's parameter services) go to the pool, so a serial
callback waiting for a reply is answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future as PoolFuture
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rclpy.callback_groups import CallbackGroup
from rclpy.context import Context
from rclpy.executors import ConditionReachedException, Executor, ShutdownException, TimeoutException, TimeoutObject


class NodeExecutor(Executor):
    """Callbacks of ``serial_group`` on one thread, in order; every other callback on ``pool_threads`` threads."""

    def __init__(self, serial_group: CallbackGroup, pool_threads: int, *, context: Context, name: str) -> None:
        super().__init__(context=context)
        self._serial_group = serial_group
        self._serial = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"serial:{name}")
        self._pool = ThreadPoolExecutor(max_workers=pool_threads, thread_name_prefix=f"pool:{name}")
        self._submitted: list[PoolFuture[None]] = []

    def _spin_once_impl(
        self, timeout_sec: float | TimeoutObject | None, wait_condition: Callable[[], bool] = lambda: False
    ) -> None:
        try:
            ready: tuple[Any, Any, Any] = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
        except (ShutdownException, TimeoutException, ConditionReachedException):
            return
        handler, entity, _node = ready
        serial = entity is not None and getattr(entity, "callback_group", None) is self._serial_group
        self._submitted = [f for f in self._submitted if not f.done()]
        self._submitted.append((self._serial if serial else self._pool).submit(handler))

    def spin_once(self, timeout_sec: float | None = None) -> None:
        self._spin_once_impl(timeout_sec)

    def spin_once_until_future_complete(self, future: Any, timeout_sec: float | TimeoutObject | None = None) -> None:
        future.add_done_callback(lambda _: self.wake())
        self._spin_once_impl(timeout_sec, future.done)

    def wait_idle(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for the callbacks already handed out to end; returns how many still run."""
        deadline = time.monotonic() + timeout_s
        pending = [f for f in self._submitted if not f.done()]
        while pending and time.monotonic() < deadline:
            time.sleep(0.01)
            pending = [f for f in pending if not f.done()]
        return len(pending)

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        """rclpy's shutdown, then the two thread pools (their idle threads end; a running callback is left)."""
        done = super().shutdown(timeout_sec)
        self._serial.shutdown(wait=False, cancel_futures=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
        return done
