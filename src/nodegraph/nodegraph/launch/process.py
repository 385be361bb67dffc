"""One supervised child process: its own process group (or the caller's), SIGTERM when its parent dies, output
forwarded line by line or kept in a log file (fresh or appended to), a wait for a line it prints or for its exit,
staged shutdown (:func:`stop_processes`).

The one way this project starts a child that it supervises: the launch engine's nodes, the sweep's training runs,
the pipeline's seed recording and the tests' peer processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from nodegraph.launch.errors import ProcessFailedError
from nodegraph.launch.lifetime import die_with_parent
from nodegraph.launch.output import PrefixedOutput

RECENT_LINES = 2000
"""Output lines a forwarding process keeps for :meth:`ManagedProcess.tail` and :meth:`ManagedProcess.wait_for_line`."""


class ManagedProcess:
    """A child in its own session: a terminal Ctrl-C reaches only the launcher, which relays it.

    ``output`` is a :class:`PrefixedOutput` (each line forwarded as ``[name] line``) or a log file path (the
    child writes stdout and stderr there, truncated at start, or appended to with ``append``: a log that several
    processes or attempts share).

    ``own_session=False`` keeps the child in the caller's process group instead: a signal to that group (a
    terminal's Ctrl-C, a supervisor stopping the caller's group) reaches the child as well, and :meth:`signal`
    goes to the child alone. Either way the child gets SIGTERM when its parent dies (:func:`die_with_parent`).
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str],
        output: PrefixedOutput | Path,
        *,
        required: bool = False,
        append: bool = False,
        own_session: bool = True,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.required = required
        self.append = append
        self.own_session = own_session
        self._env = dict(env)
        self._output = output
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._recent: deque[str] = deque(maxlen=RECENT_LINES)

    @property
    def log_path(self) -> Path | None:
        """The log file of a process whose output goes to one."""
        return self._output if isinstance(self._output, Path) else None

    @property
    def pid(self) -> int:
        assert self._process is not None, "process not started"
        return self._process.pid

    def start(self) -> ManagedProcess:
        """Start the child; returns ``self``."""
        if isinstance(self._output, Path):
            with self._output.open("ab" if self.append else "wb") as log:  # the child keeps its own descriptor
                self._process = self._popen(log)
            return self
        self._process = self._popen(subprocess.PIPE)
        self._reader = threading.Thread(target=self._forward, name=f"output-{self.name}", daemon=True)
        self._reader.start()
        return self

    def _popen(self, stdout: int | IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            env=self._env,
            start_new_session=self.own_session,
            preexec_fn=die_with_parent(os.getpid()),
        )

    def _forward(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        assert isinstance(self._output, PrefixedOutput)
        for raw in self._process.stdout:
            line = raw.decode(errors="replace").rstrip("\r\n")
            self._recent.append(line)
            self._output.line(self.name, line)

    def poll(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def wait(self, timeout_s: float | None = None) -> int:
        """The exit code once the process has exited; ``subprocess.TimeoutExpired`` after ``timeout_s``."""
        assert self._process is not None, "process not started"
        return self._process.wait(timeout_s)

    def alive(self) -> bool:
        """Started and not yet exited."""
        return self._process is not None and self._process.poll() is None

    def tail(self, n: int = 2000) -> str:
        """The last ``n`` characters of the output (from the log file, or the lines kept while forwarding)."""
        if isinstance(self._output, Path):
            with contextlib.suppress(OSError):
                return self._output.read_text(encoding="utf-8", errors="replace")[-n:]
            return ""
        return "\n".join(self._recent)[-n:]

    def last_lines(self, n: int = 20) -> list[str]:
        """The last ``n`` lines of the output."""
        return self.tail(200 * n).splitlines()[-n:]

    def wait_for_line(self, text: str, timeout_s: float, cancel: threading.Event | None = None) -> bool:
        """Wait until the output contains ``text`` (True), or ``cancel`` is set (False); ``ProcessFailedError``
        when the process exits first or ``timeout_s`` passes, naming the log file and the last output lines."""
        deadline = time.monotonic() + timeout_s
        while True:
            if text in self.tail(1_000_000):
                return True
            if (code := self.poll()) is not None:
                self.finish_output()  # a line printed just before the exit is forwarded by now
                if text in self.tail(1_000_000):
                    return True
                raise ProcessFailedError(self._failed(f"exited ({describe_exit(code)}) before printing {text!r}"))
            if time.monotonic() >= deadline:
                raise ProcessFailedError(self._failed(f"did not print {text!r} within {timeout_s:g} s"))
            if cancel is None:
                time.sleep(0.1)
            elif cancel.wait(0.1):
                return False

    def _failed(self, what: str) -> str:
        where = f" (log: {self.log_path})" if self.log_path is not None else ""
        lines = self.last_lines()
        last = "\n".join(f"    {line}" for line in lines) if lines else "    (no output)"
        return f"{self.name} {what}{where}; last output:\n{last}"

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the process group (the node and anything it spawned), or to the process alone when it
        shares the caller's group (``own_session=False``)."""
        if self._process is None or self._process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            if self.own_session:
                os.killpg(self._process.pid, sig)
            else:
                self._process.send_signal(sig)

    def finish_output(self, timeout_s: float = 1.0) -> None:
        """Wait briefly for the remaining output after the process exited."""
        if self._reader is not None:
            self._reader.join(timeout_s)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def stop_processes(
    processes: Sequence[ManagedProcess],
    output: PrefixedOutput | None = None,
    *,
    sigint_timeout_s: float,
    sigterm_timeout_s: float,
    hurry: threading.Event | None = None,
) -> None:
    """SIGINT everyone, SIGTERM after ``sigint_timeout_s``, SIGKILL after ``sigterm_timeout_s`` more.

    Setting ``hurry`` (a second Ctrl-C) skips the rest of the current grace period.
    """
    stages = (
        (signal.SIGINT, sigint_timeout_s),
        (signal.SIGTERM, sigterm_timeout_s),
        (signal.SIGKILL, 5.0),
    )
    for sig, grace_s in stages:
        alive = [p for p in processes if p.poll() is None]
        if not alive:
            return
        if sig != signal.SIGINT and output is not None:
            names = ", ".join(p.name for p in alive)
            output.error(f"escalating to {sig.name} for: {names}")
        for process in alive:
            process.signal(sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(p.poll() is None for p in alive):
            if hurry is not None and hurry.is_set() and sig != signal.SIGKILL:
                hurry.clear()
                break
            time.sleep(0.05)
