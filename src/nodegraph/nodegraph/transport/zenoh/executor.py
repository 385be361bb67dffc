"""A node's executor: one thread that runs subscription, service and timer callbacks one at a time."""

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
        with self._timers_lock:
            self._timers = [t for t in self._timers if not t.cancelled]
            if not self._timers:
                return IDLE_WAIT_S
            return max(0.0, min(t.next_due for t in self._timers) - time.monotonic())

    def _run_due_timers(self) -> None:
        now = time.monotonic()
        with self._timers_lock:
            due = [t for t in self._timers if not t.cancelled and t.next_due <= now]
        for timer in due:
            timer.next_due += timer.period_s
            if timer.next_due < now:  # fell behind by more than a period: skip, do not burst
                timer.next_due = now + timer.period_s
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
