"""A node's executor: one thread that runs subscription, service and timer callbacks one at a time.

Wall-time timers bound the thread's wait by their next deadline. ROS-time timers (``use_sim_time``) have no wall
deadline: ``/clock`` is a subscription of the same node, so each clock sample wakes the thread, is dispatched
(advancing the node's clock) and the due timers run right after it, with no polling.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nodegraph.transport.zenoh.entities import Dispatchable, ZenohTimer

IDLE_WAIT_S = 0.1


class Executor:
    def __init__(self, logger: logging.Logger, name: str) -> None:
        self._logger = logger
        self._ready: queue.SimpleQueue[Dispatchable | None] = queue.SimpleQueue()
        self._timers: list[ZenohTimer] = []
        self._timers_lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"executor:{name}", daemon=True)
        self._thread.start()

    def notify(self, entity: Dispatchable) -> None:
        """``entity`` has work; its ``dispatch`` will run on the executor thread."""
        self._ready.put(entity)

    def add_timer(self, timer: ZenohTimer) -> None:
        with self._timers_lock:
            self._timers.append(timer)
        self._ready.put(None)  # wake up to account for the new deadline

    def _next_timeout(self) -> float:
        """Seconds to wait for work: until the next wall-time timer is due, else ``IDLE_WAIT_S``."""
        with self._timers_lock:
            self._timers = [t for t in self._timers if not t.cancelled]
            deadlines = [d for d in (t.deadline for t in self._timers) if d is not None]
        if not deadlines:
            return IDLE_WAIT_S
        return max(0.0, min(deadlines) - time.monotonic())

    def _run_due_timers(self) -> None:
        now = time.monotonic()
        with self._timers_lock:
            timers = list(self._timers)
        for timer in timers:
            if timer.take(now):
                self._call(timer.callback)

    def _call(self, function: object) -> None:
        try:
            function()  # type: ignore[operator]
        except Exception:
            self._logger.exception("callback raised")

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                entity = self._ready.get(timeout=self._next_timeout())
            except queue.Empty:
                entity = None
            if self._stopped.is_set():
                break
            if entity is not None:
                self._call(entity.dispatch)
            self._run_due_timers()

    def stop(self) -> None:
        self._stopped.set()
        self._ready.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5.0)
