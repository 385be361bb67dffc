"""Helpers for the launch tests: free loopback ports, pid checks, a runner process whose output is awaited.

Named uniquely (not ``conftest``) so test modules can import it without clashing with other test folders.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from nodegraph.testing import wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def wait_gone(pids: list[int], timeout_s: float = 5.0) -> list[int]:
    """Pids still alive after ``timeout_s``."""
    with contextlib.suppress(AssertionError):  # the survivors are the answer
        wait_until(lambda: not any(pid_alive(p) for p in pids), timeout_s, "processes gone", 0.05)
    return [p for p in pids if pid_alive(p)]


class RunnerProcess:
    """``fixtures/launch_fixture.py`` in a child process; its output lines are collected as they come."""

    def __init__(self, *args: str) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            [sys.executable, str(FIXTURES / "launch_fixture.py"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1", NO_COLOR="1"),
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, pattern: str, count: int = 1, timeout_s: float = 10.0) -> list[re.Match[str]]:
        """Wait until ``count`` output lines match ``pattern``; returns the matches."""
        regex = re.compile(pattern)

        def matches() -> list[re.Match[str]]:
            return [m for line in self.lines if (m := regex.search(line))]

        with self._changed:
            if not self._changed.wait_for(lambda: len(matches()) >= count, timeout_s):
                raise AssertionError(f"no {count}× {pattern!r} in {timeout_s} s; output:\n" + self.output())
            return matches()

    def wait(self, timeout_s: float = 15.0) -> int:
        """Exit code; fails the test if the runner is still running after ``timeout_s``."""
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"runner still running after {timeout_s} s:\n{self.output()}") from None
        self._reader.join(2.0)
        return code

    def output(self) -> str:
        return "\n".join(self.lines)

    def pids(self) -> list[int]:
        """Every pid the runner or its nodes printed."""
        return [int(p) for p in re.findall(r"pid[= ](\d+)", self.output())]

    def kill_all(self) -> None:
        for pid in [self.process.pid, *self.pids()]:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()
