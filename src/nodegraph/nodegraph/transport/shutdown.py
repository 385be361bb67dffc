"""Bounded shutdown on SIGINT/SIGTERM, the same for both backends and every CLI verb.

The first signal sets an event (``SHUTDOWN`` for nodes: their ``spin()`` returns, the node and its logic close)
and arms a deadline of ``$SO101_SHUTDOWN_DEADLINE_S`` seconds (default 10). If the process is still alive at
the deadline, every thread's stack goes to stderr (``Timeout (0:00:10)!`` and the stacks, so a hang names its
cause) and it exits with status 1. A second SIGINT/SIGTERM meanwhile dumps the stacks too and ends the process
by that signal at once. Both work from C (``faulthandler``), so a main thread stuck in a native call cannot
block them. A launch stops a node with SIGINT, then SIGTERM after its grace period: that second signal ends it.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn

DEADLINE_ENV = "SO101_SHUTDOWN_DEADLINE_S"
DEFAULT_DEADLINE_S = 10.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)

SHUTDOWN = threading.Event()
"""Set by SIGINT/SIGTERM once :func:`install_signal_handlers` ran; every node's ``spin()`` then returns."""

_state = {"signalled": False}


def deadline_s() -> float:
    """``$SO101_SHUTDOWN_DEADLINE_S`` (> 0), else the default; a bad value is an error naming the variable."""
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if not raw:
        return DEFAULT_DEADLINE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{DEADLINE_ENV}={raw!r} must be a number of seconds > 0")
    return value


def _bound_the_shutdown() -> None:
    """After the first signal: arm the deadline, and let the next SIGINT/SIGTERM end the process (C handlers)."""
    _state["signalled"] = True
    faulthandler.dump_traceback_later(deadline_s(), exit=True, file=sys.stderr)
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_DFL)  # the default action of both: terminate
        faulthandler.register(signum, file=sys.stderr, all_threads=True, chain=True)  # stacks first


def _handler(event: threading.Event) -> Callable[[int, FrameType | None], None]:
    def handle(signum: int, frame: FrameType | None) -> None:
        _bound_the_shutdown()
        # Not event.set() here: the handler runs on the main thread, which may be inside event.wait() holding
        # the event's lock (Event.set would then wait for it forever); a thread sets it once the lock is free.
        threading.Thread(target=event.set, name="shutdown-signal", daemon=True).start()

    return handle


def install_signal_handlers(event: threading.Event = SHUTDOWN) -> None:
    """SIGINT/SIGTERM set ``event`` and bound the shutdown (see the module); main thread only, idempotent."""
    if threading.current_thread() is threading.main_thread() and not _state["signalled"]:
        deadline_s()  # a bad setting is reported now, not at the first Ctrl-C
        for signum in SIGNALS:
            signal.signal(signum, _handler(event))


@contextlib.contextmanager
def signals_set(event: threading.Event) -> Iterator[threading.Event]:
    """Inside the block SIGINT/SIGTERM set ``event`` (bounded as above). Without a signal the previous handlers
    come back after the block; after one, the process stays bounded while it cleans up. Outside the main
    thread the block runs without handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield event
        return
    if _state["signalled"]:  # already shutting down
        event.set()
        yield event
        return
    deadline_s()
    previous = {signum: signal.signal(signum, _handler(event)) for signum in SIGNALS}
    try:
        yield event
    finally:
        if not _state["signalled"]:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def exit_process(code: int) -> NoReturn:
    """End the process with ``code`` as a normal exit does (other non-daemon threads joined, ``atexit`` handlers
    run, logging's among them, stdio flushed) but without the interpreter's finalization. There a native thread (zenoh's
    Rust runtime, a DDS thread) that reaches for the GIL is ended by ``pthread_exit``, and the forced unwind
    aborts the whole process where native code catches it: "FATAL: exception not rethrown", status -6, seen in
    CI after ``so101 bag record`` had closed its bag and printed its summary."""
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def exit_code(status: object) -> int:
    """The process status for ``SystemExit(status)``, as the interpreter maps it: None → 0, an int as is,
    anything else printed to stderr → 1."""
    if status is None:
        return 0
    if isinstance(status, int):
        return status
    print(status, file=sys.stderr)
    return 1
