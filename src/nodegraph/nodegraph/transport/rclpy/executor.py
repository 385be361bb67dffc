"""``NodeExecutor``: an rclpy executor that runs one callback group's callbacks on its own thread, one at a time
(rclpy's single-threaded executor), and every other callback on a thread pool.

The node interface promises subscriptions, services and timers one at a time, and running goals concurrently.
rclpy's ``MultiThreadedExecutor`` gives both, but it yields a callback's task again until a pool thread has
started it, and with a ``MutuallyExclusiveCallbackGroup`` the pool's threads take turns finding the group busy:
on a loaded 2-core host JointState at 100 Hz then had a p99 of 130-340 ms (8 threads; 1-7 ms single-threaded)
and dropped messages, and a node subscribing to two topics kept a core busy. Here the serial group's callbacks
run in the spinning thread, as in the single-threaded executor; the others (goal execution, the node's
parameter and type-description services) go to the pool, each task once. Replies to the node's own service and
action clients come in on a companion node of their own thread (``RclpyNode``), so that a serial callback may
wait for one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future as PoolFuture
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rclpy.callback_groups import CallbackGroup
from rclpy.context import Context
from rclpy.executors import ConditionReachedException, Executor, ShutdownException, TimeoutException, TimeoutObject


class NodeExecutor(Executor):
    """Callbacks of ``serial_group`` in the spinning thread; every other callback on ``pool_threads`` threads."""

    def __init__(self, serial_group: CallbackGroup, pool_threads: int, *, context: Context, name: str) -> None:
        super().__init__(context=context)
        self._serial_group = serial_group
        self._pool = ThreadPoolExecutor(max_workers=pool_threads, thread_name_prefix=f"pool:{name}")
        self._submitted: list[PoolFuture[None]] = []
        self._handed_out: set[Any] = set()  # rclpy Tasks given to a thread, until done
        self._idle = threading.Condition()
        self._idle_waits = 0  # waits that ended with nothing to do

    def _spin_once_impl(
        self, timeout_sec: float | TimeoutObject | None, wait_condition: Callable[[], bool] = lambda: False
    ) -> None:
        try:
            ready: tuple[Any, Any, Any] = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
        except TimeoutException:
            with self._idle:
                self._idle_waits += 1
                self._idle.notify_all()
            return
        except (ShutdownException, ConditionReachedException):
            return
        handler, entity, _node = ready
        if entity is not None and getattr(entity, "callback_group", None) is self._serial_group:
            handler()  # here, as the single-threaded executor does (our callbacks log their own errors)
            if (error := handler.exception()) is not None:
                raise error
            return
        self._handed_out = {task for task in self._handed_out if not task.done()}
        if handler in self._handed_out:  # rclpy yields a task again until it has started: it is queued already
            return
        self._handed_out.add(handler)
        self._submitted = [f for f in self._submitted if not f.done()]
        self._submitted.append(self._pool.submit(handler))

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

    def settle(self, timeout_s: float) -> bool:
        """Wait (while another thread spins) until the executor had nothing to do: no pool task running and a
        wait that timed out since; True when it did within ``timeout_s``. Work that follows a callback (an action
        server's result to a waiting client) is then done."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._idle:
                start = self._idle_waits

                def waited(start: int = start) -> bool:
                    return self._idle_waits > start

                if not self._idle.wait_for(waited, max(deadline - time.monotonic(), 0)):
                    return False
            if self.wait_idle(0.0) == 0:
                return True

    def shutdown(self, timeout_sec: float | None = None) -> bool:
        """rclpy's shutdown, then the thread pool (its idle threads end; a running callback is left)."""
        done = super().shutdown(timeout_sec)
        self._pool.shutdown(wait=False, cancel_futures=True)
        return done
