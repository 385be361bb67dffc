"""A zenoh router on loopback, the hub every node connects to (rmw_zenoh_cpp's ``rmw_zenohd`` role).

Run it: ``python -m nodegraph.transport.zenoh.router [--listen ENDPOINT]`` (default
``$SO101_ZENOH_ENDPOINT`` or ``tcp/127.0.0.1:7447``). It prints one line starting with ``READY_PREFIX`` once
it listens, and exits with 0 on SIGINT/SIGTERM, 1 when it cannot listen.

``RouterProcess`` runs that program as a child process (used by ``so101 launch`` and by tests).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from nodegraph.launch.lifetime import die_with_parent
from nodegraph.transport.shutdown import install_signal_handlers
from nodegraph.transport.zenoh.config import endpoint_accepts_connections, router_endpoint, tcp_address

if TYPE_CHECKING:
    import zenoh

READY_PREFIX = "zenoh router ready:"
_MODULE = "nodegraph.transport.zenoh.router"


class RouterError(RuntimeError):
    """The router could not be started or stopped."""


class RouterPortInUseError(RouterError):
    """Something already listens on the router endpoint."""


def router_config(listen: str) -> zenoh.Config:
    """Router-mode ``zenoh.Config`` listening on ``listen``, multicast scouting off."""
    import zenoh

    config = zenoh.Config()
    settings = {"mode": "router", "listen/endpoints": [listen], "scouting/multicast/enabled": False}
    for key, value in settings.items():
        config.insert_json5(key, json.dumps(value))
    return config


def serve(listen: str, stop: threading.Event) -> int:
    """Run a router on ``listen`` until ``stop`` is set; 0 on a clean stop, 1 when it cannot listen."""
    import zenoh

    try:
        session = zenoh.open(router_config(listen))
    except zenoh.ZError as exc:
        in_use = "Address already in use" in str(exc)
        reason = "address already in use" if in_use else str(exc)
        print(f"zenoh router: cannot listen on {listen}: {reason}", file=sys.stderr, flush=True)
        return 1
    try:
        print(f"{READY_PREFIX} {listen} (zid {session.zid()}, pid {os.getpid()})", flush=True)
        while not stop.wait(0.2):
            pass
    finally:
        session.close()  # explicitly: leaving it to interpreter shutdown can hang
    print("zenoh router stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m " + _MODULE, description="zenoh router for so101")
    parser.add_argument("--listen", default=None, help="endpoint to listen on (default: %(default)s)")
    ns = parser.parse_args(argv)
    stop = threading.Event()
    install_signal_handlers(stop)  # SIGINT/SIGTERM stop it; a second one or the deadline ends the process
    return serve(ns.listen or router_endpoint(), stop)


class RouterProcess:
    """The router as a child process: ``start()`` returns once its TCP port accepts connections.

    ``on_output`` receives each line the router prints (default: kept only for error messages).
    Usable as a context manager; ``stop()`` sends SIGINT, then SIGTERM, then SIGKILL.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        startup_timeout_s: float = 15.0,
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self.endpoint = endpoint or router_endpoint()
        tcp_address(self.endpoint)  # validate early
        self.startup_timeout_s = startup_timeout_s
        self._on_output = on_output
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()
        self._tail: collections.deque[str] = collections.deque(maxlen=20)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def poll(self) -> int | None:
        """Exit code once the router has exited, else ``None`` (also ``None`` before ``start``)."""
        return self._process.poll() if self._process else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> RouterProcess:
        if self._process is not None:
            raise RouterError("router already started")
        if endpoint_accepts_connections(self.endpoint):
            raise RouterPortInUseError(self._in_use_message())
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._process = subprocess.Popen(
            [sys.executable, "-m", _MODULE, "--listen", self.endpoint],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            start_new_session=True,  # a terminal Ctrl-C reaches the launcher, which stops us last
            preexec_fn=die_with_parent(os.getpid()),
        )
        self._reader = threading.Thread(target=self._read, name="zenoh-router-output", daemon=True)
        self._reader.start()
        self._wait_ready()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for raw in self._process.stdout:
            line = raw.rstrip("\n")
            self._tail.append(line)
            if line.startswith(READY_PREFIX):
                self._ready.set()
            if self._on_output is not None:
                self._on_output(line)

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                if self._reader is not None:
                    self._reader.join(timeout=2.0)
                output = "\n".join(self._tail)
                if self._process.stdout is not None and not (self._reader and self._reader.is_alive()):
                    self._process.stdout.close()
                self._process = None
                if "address already in use" in output.lower():
                    raise RouterPortInUseError(self._in_use_message())
                raise RouterError(f"zenoh router exited with code {code} during startup:\n{output}")
            if self._ready.is_set() and endpoint_accepts_connections(self.endpoint):
                return
            time.sleep(0.05)
        self.stop()
        raise RouterError(f"zenoh router did not accept connections on {self.endpoint} within "
                          f"{self.startup_timeout_s:.0f} s")  # fmt: skip

    def _in_use_message(self) -> str:
        return (
            f"{self.endpoint} is already in use (another zenoh router?). Stop it, reuse it "
            f"(`so101 launch --no-router`), or pick another endpoint with $SO101_ZENOH_ENDPOINT"
        )

    def stop(self, timeout_s: float = 5.0) -> int | None:
        """Stop the router; returns its exit code (``None`` if it was never started)."""
        process = self._process
        if process is None:
            return None
        for sig, wait_s in ((signal.SIGINT, timeout_s), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            if process.poll() is not None:
                break
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(wait_s)
            except subprocess.TimeoutExpired:
                continue
        code = process.wait()
        if self._reader is not None:
            self._reader.join(timeout=2.0)
        if process.stdout is not None and (self._reader is None or not self._reader.is_alive()):
            process.stdout.close()  # the reader saw the end of the output: the pipe is ours to close
        return code

    def __enter__(self) -> RouterProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


if __name__ == "__main__":
    sys.exit(main())
