"""Child processes of an evaluation (router, policy server, sim node, policy node): started with the zenoh
endpoint in their environment, output kept in log files, stopped with SIGINT → SIGTERM → SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from .errors import PolicyError


class Child:
    """One child process; ``name`` labels its log file ``<log_dir>/<name>.log``."""

    def __init__(self, name: str, argv: list[str], log_dir: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log: IO[str] = self.log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, text=True, env={**env, "PYTHONUNBUFFERED": "1"}
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, n: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-n:]
        return ""

    def wait_for_line(self, text: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if text in self.tail(100_000):
                return
            if not self.alive():
                raise PolicyError(f"{self.name} exited ({self.process.returncode}): {self.tail()}")
            time.sleep(0.1)
        raise PolicyError(f"{self.name} did not print {text!r} within {timeout_s:g} s: {self.tail()}")

    def stop(self, timeout_s: float = 10.0) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if not self.alive():
                break
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                continue
        self._log.close()


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def child_env(zenoh_endpoint: str) -> dict[str, str]:
    """The environment of a graph's node processes: zenoh through the router at ``zenoh_endpoint``, whatever
    ``$SO101_TRANSPORT`` says (the evaluator's own node is a zenoh node; with rclpy importable, ``auto`` would put
    the sim and policy nodes on DDS, where the evaluator never sees their services)."""
    from nodegraph.transport.runtime import ENV as TRANSPORT_ENV
    from nodegraph.transport.zenoh.config import ENDPOINT_ENV

    env = dict(os.environ)
    env[ENDPOINT_ENV] = zenoh_endpoint
    env[TRANSPORT_ENV] = "zenoh"
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env
