"""Run a launch description: one process per node, on one backend (what ``so101 launch`` does).

On zenoh (the default) a router is started on ``$SO101_ZENOH_ENDPOINT`` (default ``tcp/127.0.0.1:7447``) unless
``router=False`` or something already listens there; nodes get the endpoint in ``SO101_ZENOH_ENDPOINT``. On
rclpy the nodes are rclpy nodes in ``$ROS_DOMAIN_ID`` (DDS discovery; no router). Output lines are prefixed
``[node]``. Nodes start in the description's order; after a node with a ``ready_line`` the next one starts
once that line is printed (it exiting first or not printing it in time ends the launch, exit status 1).
Ctrl-C/SIGTERM stops every node (SIGINT, then SIGTERM, then SIGKILL), then the router.

Exit status: 0 when every node exits 0 on its own, or on Ctrl-C/SIGTERM; when a *required* node exits, the
others are stopped and its exit code is returned (1 if it was killed by a signal; 0 if it exited 0); a
non-required node dying is reported and the rest go on (the final status is then 1). 2: bad launch name or
arguments; 1: router or executable problems.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TextIO

from nodegraph.launch.description import LaunchDescriptionData
from nodegraph.launch.errors import LaunchArgumentError, LaunchError, ProcessFailedError, UnknownLaunchError
from nodegraph.launch.executables import EntryPointResolver, ExecutableResolver
from nodegraph.launch.output import PrefixedOutput
from nodegraph.launch.process import ManagedProcess, describe_exit, stop_processes
from nodegraph.launch.resolve import ConfigDir, ResolvedLaunch, ResolvedNode, resolve_launch
from nodegraph.transport.runtime import ENV as TRANSPORT_ENV
from nodegraph.transport.runtime import rclpy_import_error
from nodegraph.transport.zenoh.config import ENDPOINT_ENV, endpoint_accepts_connections, router_endpoint
from nodegraph.transport.zenoh.router import RouterError, RouterProcess

ROUTER_NAME = "zenoh_router"
TRANSPORTS = ("zenoh", "rclpy")


def launch_transport(requested: str | None = None) -> str:
    """The backend of a launch's nodes: ``requested`` (``--transport``), else ``$SO101_TRANSPORT`` when it says
    ``zenoh`` or ``rclpy``; ``auto`` or unset is zenoh, the transport of the ``so101`` CLI verbs, whatever is
    installed. Raises LaunchError for another value."""
    value = (requested if requested is not None else os.environ.get(TRANSPORT_ENV, "")).strip().lower()
    if value in ("", "auto"):
        return "zenoh"
    if value not in TRANSPORTS:
        source = "--transport" if requested is not None else TRANSPORT_ENV
        raise LaunchError(f"{source}={value!r}: a launch runs on zenoh or rclpy")
    return value


def zenoh_node_environment(endpoint: str) -> dict[str, str]:
    """This process's environment for node processes on zenoh through the router at ``endpoint``, whatever
    ``$SO101_TRANSPORT`` says (with rclpy importable, ``auto`` would put them on DDS), output unbuffered."""
    return dict(os.environ, PYTHONUNBUFFERED="1", **{ENDPOINT_ENV: endpoint, TRANSPORT_ENV: "zenoh"})


@dataclass
class RunnerOptions:
    """How to run a launch; the defaults are what ``so101 launch`` does."""

    transport: str = "zenoh"
    """The nodes' backend: ``zenoh`` or ``rclpy`` (:func:`launch_transport`)."""
    router: bool = True
    """Start a router unless one already listens on the endpoint (zenoh only)."""
    endpoint: str | None = None
    """Router endpoint; default ``$SO101_ZENOH_ENDPOINT`` or ``tcp/127.0.0.1:7447``."""
    sigint_timeout_s: float = 5.0
    sigterm_timeout_s: float = 5.0
    resolver: ExecutableResolver = field(default_factory=EntryPointResolver)
    config_dir: ConfigDir = None
    """Where parameter files named by the description lie (:data:`~nodegraph.launch.resolve.ConfigDir`)."""
    stream: TextIO | None = None
    colour: bool | None = None
    log_dir: Path | None = None
    """Each node's output in ``<log_dir>/<node>.log`` (truncated at start) instead of prefixed on ``stream``."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables for the nodes, over this process's."""


class LaunchRunner:
    """Runs one resolved launch until it ends; ``run()`` returns the exit status."""

    def __init__(self, launch: ResolvedLaunch, options: RunnerOptions | None = None) -> None:
        self.launch = launch
        self.options = options or RunnerOptions()
        self.output = PrefixedOutput(self.options.stream, self.options.colour)
        self.endpoint = self.options.endpoint or router_endpoint()
        self._shutdown = threading.Event()
        self._hurry = threading.Event()
        self._router: RouterProcess | None = None
        self._processes: list[ManagedProcess] = []
        self._reported: set[str] = set()

    def request_shutdown(self) -> None:
        """Stop everything (what Ctrl-C does); a second call shortens the grace periods."""
        if self._shutdown.is_set():
            self._hurry.set()
        self._shutdown.set()

    def run(self) -> int:
        with _signals_to(self.request_shutdown):
            try:
                if not self.start():
                    return 0
                return self._supervise()
            except (LaunchError, RouterError) as exc:
                self.output.error(str(exc))
                return 1
            finally:
                self._stop_all()

    def start(self) -> list[ManagedProcess]:
        """Start the router (zenoh) and every node, in the description's order, and return their processes once
        every node with a ``ready_line`` has printed it (the nodes after one start only then); nothing else is
        awaited (empty: nothing to start, or a shutdown came first); :meth:`stop` ends them. Raises LaunchError
        (an executable not found; ProcessFailedError: a node exited before its ready line or timed out) and
        RouterError."""
        commands = [(node, self.options.resolver(node.package, node.executable)) for node in self.launch.nodes]
        for name in self.launch.skipped:
            self.output.info(f"skipping {name} (condition false)")
        if not commands:
            self.output.info("no nodes to launch")
            return []
        env = {**self._node_environment(), **self.options.env}
        if self._shutdown.is_set():
            return []
        log_dir = self.options.log_dir
        for node, command in commands:
            output = log_dir / f"{node.name}.log" if log_dir is not None else self.output
            process = ManagedProcess(node.name, [*command, *node.ros_arguments()], env, output, required=node.required)
            process.start()
            self._processes.append(process)
            self.output.info(f"started {node.fully_qualified_name} [pid {process.pid}]")
            if node.ready_line is not None and not self._await_ready(node, process):
                return []
        return list(self._processes)

    def _await_ready(self, node: ResolvedNode, process: ManagedProcess) -> bool:
        """Wait for ``node``'s ready line: True once printed, False on a shutdown; ProcessFailedError naming the
        node, its log and its last lines when it exits first or times out."""
        assert node.ready_line is not None
        began = time.monotonic()
        try:
            if not process.wait_for_line(node.ready_line, node.ready_timeout_s, self._shutdown):
                return False
        except ProcessFailedError as exc:
            raise ProcessFailedError(f"launch {self.launch.name!r}: node {exc}") from None
        self.output.info(f"{node.fully_qualified_name} is ready after {time.monotonic() - began:.1f} s")
        return True

    def process(self, name: str) -> ManagedProcess:
        """The started process of node ``name`` (KeyError if there is none)."""
        for process in self._processes:
            if process.name == name:
                return process
        raise KeyError(name)

    def stop(self) -> None:
        """Stop every node (SIGINT, then SIGTERM, then SIGKILL after the grace periods), then the router."""
        self._stop_all()

    def _node_environment(self) -> dict[str, str]:
        """The nodes' environment, with the backend set explicitly (a zenoh launch stays on zenoh in a shell
        where rclpy imports); starts the router of a zenoh launch."""
        if self.options.transport == "rclpy":
            if (error := rclpy_import_error()) is not None:
                raise LaunchError(f"--transport rclpy: rclpy does not import here ({error}); run scripts/setup")
            domain = os.environ.get("ROS_DOMAIN_ID", "0") or "0"
            self.output.info(f"nodes on rclpy (ROS_DOMAIN_ID={domain}); no zenoh router")
            return dict(os.environ, PYTHONUNBUFFERED="1", **{TRANSPORT_ENV: "rclpy"})
        self._start_router()
        return zenoh_node_environment(self.endpoint)

    def _start_router(self) -> None:
        if not self.options.router:
            self.output.info(f"not starting a zenoh router; nodes connect to {self.endpoint}")
            return
        if endpoint_accepts_connections(self.endpoint):
            self.output.info(f"using the zenoh router already listening on {self.endpoint}")
            return
        router = RouterProcess(self.endpoint, on_output=lambda text: self.output.line(ROUTER_NAME, text))
        self._router = router.start()
        self.output.info(f"started zenoh router on {self.endpoint} [pid {router.pid}]")

    def _supervise(self) -> int:
        while True:
            if self._shutdown.is_set():
                self.output.info("shutting down")
                return 0
            if self._router is not None and (code := self._router.poll()) is not None:
                self.output.error(f"the zenoh router died ({describe_exit(code)}); shutting down")
                return 1
            for process in self._report_exits():
                if process.required:
                    code = process.poll() or 0
                    self.output.info(f"required node {process.name} exited; shutting down")
                    return code if 0 <= code < 256 else 1
            if all(process.poll() is not None for process in self._processes):
                failed = [p.name for p in self._processes if p.poll() != 0]
                self.output.info("all nodes exited" + (f"; failed: {', '.join(failed)}" if failed else ""))
                return 1 if failed else 0
            self._shutdown.wait(0.1)

    def _report_exits(self) -> list[ManagedProcess]:
        exited = []
        for process in self._processes:
            code = process.poll()
            if code is None or process.name in self._reported:
                continue
            self._reported.add(process.name)
            process.finish_output()
            message = f"{process.name} [pid {process.pid}] {describe_exit(code)}"
            if code == 0:
                self.output.info(f"process finished cleanly: {message}")
            elif self._shutdown.is_set():
                self.output.info(f"process stopped: {message}")
            else:
                self.output.error(f"process has died: {message}")
            exited.append(process)
        return exited

    def _stop_all(self) -> None:
        self._shutdown.set()
        stop_processes(
            self._processes,
            self.output,
            sigint_timeout_s=self.options.sigint_timeout_s,
            sigterm_timeout_s=self.options.sigterm_timeout_s,
            hurry=self._hurry,
        )
        self._report_exits()
        if self._router is not None:
            code = self._router.stop(self.options.sigint_timeout_s)
            self.output.info(f"stopped zenoh router ({describe_exit(code or 0)})")
            self._router = None


@contextlib.contextmanager
def _signals_to(callback: Callable[[], None]) -> Iterator[None]:
    """Route SIGINT/SIGTERM to ``callback`` inside the block (only possible in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        # on a thread: the main thread may be inside an Event.wait() of the callback's events, holding its lock
        threading.Thread(target=callback, name="launch-signal", daemon=True).start()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_description(data: LaunchDescriptionData, args: Sequence[str] = (), options: RunnerOptions | None = None) -> int:
    """Run ``data`` with ``name:=value`` arguments; returns the exit status (2 for bad arguments)."""
    options = options or RunnerOptions()
    try:
        launch = resolve_launch(data, args, config_dir=options.config_dir)
    except LaunchArgumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return LaunchRunner(launch, options).run()


@contextlib.contextmanager
def launched(
    data: LaunchDescriptionData, args: Sequence[str] = (), options: RunnerOptions | None = None
) -> Iterator[LaunchRunner]:
    """``data`` started with ``name:=value`` arguments, for a program that drives the graph itself (no signal
    handling, no supervision: :meth:`LaunchRunner.process` gives each node's process), entered once every node
    with a ready line is ready; every node and the router stop when the block ends. Raises LaunchArgumentError,
    LaunchError (ProcessFailedError: a node not ready) and RouterError."""
    options = options or RunnerOptions()
    runner = LaunchRunner(resolve_launch(data, args, config_dir=options.config_dir), options)
    try:
        runner.start()
        yield runner
    finally:
        runner.stop()


def run_launch(
    lookup: Callable[[str], LaunchDescriptionData],
    name: str,
    args: Sequence[str] = (),
    options: RunnerOptions | None = None,
) -> int:
    """Run the description ``lookup(name)`` gives with ``name:=value`` arguments; returns the exit status.

    Errors the user can fix (``UnknownLaunchError`` from ``lookup``, bad arguments) print one line to stderr and
    return 2.
    """
    try:
        data = lookup(name)
    except UnknownLaunchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run_description(data, args, options)
