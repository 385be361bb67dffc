"""The process-wide Zenoh context: one session (like an rmw context), entity ids, the graph cache and the
router watchdog.

Nodes are zenoh peers connecting to the router endpoint (``SO101_ZENOH_ENDPOINT``, default
``tcp/127.0.0.1:7447``), as rmw_zenoh_cpp's default session config does. The session opens even when no
router is up yet; the watchdog logs a clear error, then reports when the router appears, disappears and
comes back (zenoh reconnects by itself).
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import threading
import time
from collections.abc import Callable

import zenoh

from nodegraph.transport.log import transport_logger
from nodegraph.transport.shutdown import SHUTDOWN, install_signal_handlers
from nodegraph.transport.zenoh.config import router_endpoint
from nodegraph.transport.zenoh.keyexpr import ADMIN_SPACE, ParsedToken, parse_token

log = transport_logger
ROUTER_CHECK_PERIOD_S = 0.5
STOP_POLL_S = 0.1

__all__ = ["SHUTDOWN", "Context", "install_signal_handlers"]  # the signal handling is nodegraph.transport.shutdown's


def domain_id() -> int:
    """ROS_DOMAIN_ID (0 by default), as rmw_zenoh reads it."""
    value = os.environ.get("ROS_DOMAIN_ID", "0") or "0"
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"ROS_DOMAIN_ID must be an integer, got {value!r}") from None


def session_config(endpoint: str) -> zenoh.Config:
    """Peer config following rmw_zenoh_cpp's defaults: connect to the router, listen on loopback."""
    config = zenoh.Config()
    settings = {
        "mode": "peer",
        "connect/endpoints": [endpoint],
        "connect/exit_on_failure": False,
        "listen/endpoints": ["tcp/127.0.0.1:0"],
        "scouting/multicast/enabled": False,
        "scouting/gossip/enabled": True,
        "timestamping/enabled": True,
    }
    for key, value in settings.items():
        config.insert_json5(key, json.dumps(value))
    return config


class GraphCache:
    """Liveliness tokens currently alive on the domain (``@ros2_lv/<domain>/**``)."""

    def __init__(self, session: zenoh.Session, domain: int) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, ParsedToken] = {}
        self._changed = threading.Condition(self._lock)
        self._generation = 0  # bumped on every token change
        self._subscriber = session.liveliness().declare_subscriber(
            f"{ADMIN_SPACE}/{domain}/**", self._on_sample, history=True
        )

    def _on_sample(self, sample: zenoh.Sample) -> None:
        key = str(sample.key_expr)
        with self._lock:
            if sample.kind == zenoh.SampleKind.DELETE:
                self._tokens.pop(key, None)
            elif (token := parse_token(key)) is not None:
                self._tokens[key] = token
            self._generation += 1
            self._changed.notify_all()

    def tokens(self) -> list[ParsedToken]:
        """The graph tokens alive now."""
        with self._lock:
            return list(self._tokens.values())

    def keyed_tokens(self) -> list[tuple[str, ParsedToken]]:
        """``(liveliness key, token)`` pairs alive now (an entity's GID is derived from its key)."""
        with self._lock:
            return list(self._tokens.items())

    def wait_for(
        self,
        predicate: Callable[[list[ParsedToken]], bool],
        timeout_s: float,
        stop: threading.Event | None = None,
    ) -> bool:
        """Block until ``predicate(tokens)`` holds (True), ``timeout_s`` passes or ``stop`` is set (False).

        The predicate runs without the cache's lock held, so it may call ``tokens()`` (or anything that does)
        and the liveliness callback is never blocked by it.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                generation = self._generation
            if predicate(self.tokens()):
                return True
            with self._lock:
                while self._generation == generation:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or (stop is not None and stop.is_set()):
                        return False
                    self._changed.wait(min(remaining, STOP_POLL_S) if stop is not None else remaining)

    def close(self) -> None:
        self._subscriber.undeclare()


class Context:
    """One zenoh session per process, shared by its nodes."""

    _instance: Context | None = None
    _instance_lock = threading.Lock()

    def __init__(self, endpoint: str | None = None, *, owned_by_nodes: bool = False) -> None:
        self.endpoint = endpoint or router_endpoint()
        self._owned_by_nodes = owned_by_nodes
        self._nodes = 0
        self.domain_id = domain_id()
        self.session = zenoh.open(session_config(self.endpoint))
        self.zid = str(self.session.zid())
        self._ids = itertools.count()
        self._ids_lock = threading.Lock()
        self.graph = GraphCache(self.session, self.domain_id)
        self._closed = threading.Event()
        self.router_connected = bool(self.session.info.routers_zid())
        if not self.router_connected:
            log.error(
                "no zenoh router at %s: start one with `so101 launch ...` or "
                "`python -m nodegraph.transport.zenoh.router`; waiting for it",
                self.endpoint,
            )
        self._watchdog = threading.Thread(target=self._watch_router, name="zenoh-router-watch", daemon=True)
        self._watchdog.start()
        atexit.register(self.close)  # an open session can hang the interpreter at exit

    @classmethod
    def get(cls) -> Context:
        with cls._instance_lock:
            if cls._instance is None or cls._instance._closed.is_set():
                cls._instance = Context(owned_by_nodes=True)
            return cls._instance

    def attach(self) -> None:
        """A node starts using this context."""
        with self._ids_lock:
            self._nodes += 1

    def detach(self) -> None:
        """A node is done with this context; the process-wide context closes when its last node is."""
        with self._ids_lock:
            self._nodes -= 1
            last = self._nodes <= 0
        if last and self._owned_by_nodes:
            self.close()

    def next_entity_id(self) -> int:
        with self._ids_lock:
            return next(self._ids)

    def _watch_router(self) -> None:
        while not self._closed.wait(ROUTER_CHECK_PERIOD_S):
            try:
                connected = bool(self.session.info.routers_zid())
            except Exception:  # session closing
                return
            if connected and not self.router_connected:
                log.warning("connected to zenoh router at %s", self.endpoint)
            elif not connected and self.router_connected:
                log.error("lost the zenoh router at %s; reconnecting", self.endpoint)
            self.router_connected = connected

    def wait_for_router(self, timeout_s: float) -> bool:
        """True once a router is connected (polls the session)."""
        deadline = threading.Event()
        waited = 0.0
        while waited <= timeout_s:
            if self.session.info.routers_zid():
                return True
            deadline.wait(0.05)
            waited += 0.05
        return False

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self.graph.close()
        finally:
            self.session.close()
