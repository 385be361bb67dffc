"""One launched node process: its own process group, output forwarded line by line, staged shutdown."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

from nodegraph.launch.output import PrefixedOutput
from nodegraph.transport.zenoh.router import die_with_parent


class ManagedProcess:
    """A child in its own session: a terminal Ctrl-C reaches only the launcher, which relays it."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str],
        output: PrefixedOutput,
        *,
        required: bool = False,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.required = required
        self._env = dict(env)
        self._output = output
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None, "process not started"
        return self._process.pid

    def start(self) -> None:
        self._process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self._env,
            start_new_session=True,
            preexec_fn=die_with_parent(os.getpid()),
        )
        self._reader = threading.Thread(target=self._forward, name=f"output-{self.name}", daemon=True)
        self._reader.start()

    def _forward(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for raw in self._process.stdout:
            self._output.line(self.name, raw.decode(errors="replace").rstrip("\r\n"))

    def poll(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the process group (the node and anything it spawned)."""
        if self._process is None or self._process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, sig)

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
    output: PrefixedOutput,
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
        if sig != signal.SIGINT:
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
