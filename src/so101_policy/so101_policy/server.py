"""The policy server: GR00T N1.6's ZMQ REQ/REP protocol in front of a :class:`PolicyBackend`.

Binds ``tcp://127.0.0.1:5555`` by default. Every request gets exactly one reply; anything wrong with a request
(malformed msgpack, over the size limit, a pickled array, a wrong token, an unknown endpoint, a bad
observation shape, a policy exception) is answered ``{"error": "..."}`` and the server serves on. ``kill``
stops the loop; it needs a configured token (a server without one cannot be killed over the wire).
It speaks N1.6 (:mod:`.protocol`) by default, N1.5 (:mod:`.protocol_n15`: flat observation and action keys,
``ModalityConfig`` as a JSON string) with ``protocol="n1.5"``.

:meth:`PolicyServer.warm_up` runs a few ``get_action`` requests through :meth:`~PolicyServer.handle` (the path
a client's request takes) before serving, so a model's first-call costs (CUDA / cuDNN initialisation, autotuning,
compilation) are paid before anyone waits on them. Requests arriving meanwhile are answered between warm-up
runs: ``ping`` with ``ready: false``, ``get_action`` / ``reset`` with an error. ``ping`` replies carry ``ready``
(warm-up done), ``warmup_s`` and ``warmup_runs``; a server started without warm-up says ``ready: false`` but
serves.
"""

from __future__ import annotations

import hmac
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import zmq

from . import protocol_n15
from .backend import PolicyBackend
from .errors import PolicyError, ProtocolError, ServerError
from .protocol import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_PORT,
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    check_action,
    check_observation,
    modality_config_reply,
    pack,
    unpack,
)


@dataclass(frozen=True)
class ServerConfig:
    """Where and how the server listens; ``api_token`` None = no token asked; ``protocol`` one of
    :data:`~.protocol.PROTOCOLS` (the GR00T version whose wire it speaks)."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    api_token: str | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    protocol: str = DEFAULT_PROTOCOL

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"server: protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"server: port must be 0..65535, got {self.port}")
        if self.max_message_bytes < 1024:
            raise ValueError(f"server: max_message_bytes must be >= 1024, got {self.max_message_bytes}")
        if self.api_token is not None and not self.api_token:
            raise ValueError("server: api_token must be non-empty (or None for no token)")


@dataclass(frozen=True)
class WarmUp:
    """A finished warm-up: ``runs`` inferences in ``total_s`` seconds, the last one taking ``last_s``."""

    runs: int
    total_s: float
    last_s: float


class PolicyServer:
    """Serve ``backend`` (see the module docstring). ``serve_forever`` blocks; ``stop`` ends it from any thread."""

    def __init__(self, backend: PolicyBackend, config: ServerConfig | None = None) -> None:
        self.backend = backend
        self.config = config or ServerConfig()
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self._socket = self._context.socket(zmq.REP)
        self._socket.setsockopt(zmq.LINGER, 0)
        # beyond twice the limit zmq drops the message (and the peer) without buffering it; between the limit
        # and that the server still answers with an error
        self._socket.setsockopt(zmq.MAXMSGSIZE, 2 * self.config.max_message_bytes)
        if self.config.port == 0:
            self.port = self._socket.bind_to_random_port(f"tcp://{self.config.host}")
        else:
            self._socket.bind(f"tcp://{self.config.host}:{self.config.port}")
            self.port = self.config.port
        self._stop = threading.Event()
        self._warming = False
        self.warmup: WarmUp | None = None  # set once warm_up() finished: the server is ready
        self.requests = 0
        self.errors = 0

    @property
    def endpoint(self) -> str:
        return f"tcp://{self.config.host}:{self.port}"

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._socket.close(linger=0)

    def warm_up(self, observation: dict[str, Any], runs: int = 3) -> WarmUp:
        """Answer ``runs`` ``get_action`` requests for ``observation`` through :meth:`handle`, then reset the
        policy; requests that arrive meanwhile are answered between runs (see the module docstring). ``runs`` 0
        marks the server ready at once. Stops early (not ready) after :meth:`stop`.

        Raises:
            ServerError: a warm-up request got an error reply (the model cannot answer this observation).
        """
        request: dict[str, Any] = {"endpoint": "get_action", "data": {"observation": observation, "options": None}}
        if self.config.api_token is not None:
            request["api_token"] = self.config.api_token
        raw = pack(request)
        t0 = last = time.monotonic()
        for i in range(runs):
            self._answer_waiting()
            if self._stop.is_set():
                return WarmUp(i, time.monotonic() - t0, 0.0)
            t = time.monotonic()
            reply = unpack(self.handle(raw), self.config.max_message_bytes)
            last = time.monotonic() - t
            if isinstance(reply, dict) and "error" in reply:
                raise ServerError(f"warm-up inference {i + 1} of {runs} failed: {reply['error']}")
        self.backend.reset(None)
        self.warmup = WarmUp(runs, time.monotonic() - t0, last if runs else 0.0)
        return self.warmup

    def _answer_waiting(self) -> None:
        """Answer every request already waiting, as a server still warming up."""
        self._warming = True
        try:
            while self._socket.poll(0, zmq.POLLIN):
                self._socket.send(self.handle(self._socket.recv(copy=False).buffer), copy=False)
        finally:
            self._warming = False

    def serve_forever(self, poll_ms: int = 100) -> None:
        """Answer requests until ``kill`` or :meth:`stop`; closes the socket at the end."""
        try:
            while not self._stop.is_set():
                if not self._socket.poll(poll_ms, zmq.POLLIN):
                    continue
                frame = self._socket.recv(copy=False)  # zero-copy: decoded straight from zmq's message
                self._socket.send(self.handle(frame.buffer), copy=False)
        finally:
            self.close()

    def handle(self, raw: bytes | memoryview) -> memoryview:
        """The reply bytes for one request's bytes (never raises)."""
        self.requests += 1
        try:
            result = self._dispatch(raw)
            return pack(result)
        except Exception as exc:  # the server lives on, whatever the request did
            self.errors += 1
            kind = "" if isinstance(exc, PolicyError) else f"{type(exc).__name__}: "
            try:
                return pack({"error": f"{kind}{exc}"})
            except ProtocolError:
                return pack({"error": "internal error"})

    def _dispatch(self, raw: bytes | memoryview) -> Any:
        request = unpack(raw, self.config.max_message_bytes)
        if not isinstance(request, dict):
            raise ProtocolError(f"request must be a map, got {type(request).__name__}")
        token = self.config.api_token
        if token is not None:
            given = request.get("api_token")
            if not isinstance(given, str) or not hmac.compare_digest(given.encode(), token.encode()):
                raise ProtocolError("unauthorized: wrong or missing api_token")
        endpoint = request.get("endpoint", "get_action")
        data = request.get("data") or {}
        if not isinstance(data, dict):
            raise ProtocolError(f"'data' must be a map, got {type(data).__name__}")
        n15 = self.config.protocol == "n1.5"
        if endpoint == "ping":
            warm = self.warmup
            return {
                "status": "ok",
                "message": "Server is warming up" if self._warming else "Server is running",
                "ready": warm is not None,
                "warmup_s": warm.total_s if warm else 0.0,
                "warmup_runs": warm.runs if warm else 0,
            }
        if endpoint == "kill":
            if token is None:
                raise ProtocolError("kill refused: this server has no api_token configured")
            self._stop.set()
            return {"status": "ok", "message": "Server is shutting down"}
        if self._warming and endpoint in ("get_action", "reset"):
            raise PolicyError("not ready: the server is warming up its model (ping says ready when done)")
        if endpoint == "reset":
            return self.backend.reset(data.get("options"))
        if endpoint == "get_modality_config":
            reply = protocol_n15.modality_config_reply if n15 else modality_config_reply
            return reply(self.backend.cameras, self.backend.horizon)
        if endpoint == "get_action":
            obs: Any
            options: Any = None
            if n15:  # data is the flat observation, without options; the reply is the flat action alone
                obs, batched = protocol_n15.nested_observation(data, self.backend.cameras)
            else:
                obs, batched, options = data.get("observation"), True, data.get("options")
            check_observation(obs, self.backend.cameras)
            assert isinstance(obs, dict)
            action, info = self.backend.get_action(obs, options)
            check_action(action)
            if n15:
                return protocol_n15.flat_action(action, batched)
            return [{k: np.asarray(v, dtype=np.float32) for k, v in action.items()}, info]
        raise ProtocolError(f"unknown endpoint {endpoint!r}")
