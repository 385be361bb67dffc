"""A child process that cannot outlive its parent (Linux ``prctl(PR_SET_PDEATHSIG)``).

One helper for every supervisor: the launch engine's :class:`~nodegraph.launch.process.ManagedProcess`, the zenoh
router's process, and the pipeline's isolated stages (which call the hook themselves in a spawned child).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A hook to run in the child (a ``preexec_fn``, or first thing in a spawned process): the kernel sends it
    ``sig`` when the process ``parent_pid`` dies, even by SIGKILL; a child whose parent is already gone exits
    with status 1. None off Linux (no such kernel call)."""
    if not sys.platform.startswith("linux"):
        return None

    def setup() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return setup
