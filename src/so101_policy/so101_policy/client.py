"""A GR00T N1.6 policy client with timeouts (the stock client has none and blocks forever on a dead server).

Each request waits at most ``timeout_ms``; after a timeout the REQ socket is in a broken state, so it is closed
and a fresh one connects for the next request. Errors the server reports raise :class:`ServerError`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import zmq

from .errors import PolicyError, ServerError, ServerTimeout
from .protocol import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_PORT, check_action, pack, unpack


class PolicyClient:
    """Talks to a :class:`~so101_policy.server.PolicyServer` (or GR00T's own ``run_gr00t_server.py``)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        timeout_ms: int = 1000,
        api_token: str | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if timeout_ms <= 0:
            raise ValueError(f"client: timeout_ms must be > 0, got {timeout_ms}")
        self.address = f"tcp://{host}:{port}"
        self.timeout_ms = timeout_ms
        self.api_token = api_token
        self.max_message_bytes = max_message_bytes
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self._socket: zmq.Socket[bytes] | None = None

    def _connect(self) -> zmq.Socket[bytes]:
        if self._socket is None:
            sock: zmq.Socket[bytes] = self._context.socket(zmq.REQ)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RCVTIMEO, self.timeout_ms)
            sock.setsockopt(zmq.SNDTIMEO, self.timeout_ms)
            sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
            sock.connect(self.address)
            self._socket = sock
        return self._socket

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    def __enter__(self) -> PolicyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, endpoint: str, data: dict[str, Any] | None = None) -> Any:
        """One request; returns the decoded reply.

        Raises:
            ServerTimeout: no reply within ``timeout_ms`` (the socket is recreated for the next call).
            ServerError: the server answered ``{"error": ...}``.
        """
        request: dict[str, Any] = {"endpoint": endpoint}
        if data is not None:
            request["data"] = data
        if self.api_token is not None:
            request["api_token"] = self.api_token
        payload = pack(request)
        sock = self._connect()
        try:
            sock.send(payload, copy=False)  # zero-copy above zmq.COPY_THRESHOLD (64 KiB): camera frames
            raw = sock.recv(copy=False).buffer
        except zmq.Again as exc:
            self.close()
            raise ServerTimeout(
                f"policy server at {self.address} did not answer {endpoint!r} within {self.timeout_ms} ms"
            ) from exc
        reply = unpack(raw, self.max_message_bytes)
        if isinstance(reply, dict) and "error" in reply and len(reply) == 1:
            raise ServerError(f"policy server: {reply['error']}")
        return reply

    def ping(self) -> bool:
        """True when the server answers ``ping`` in time (False on a timeout)."""
        try:
            reply = self.call("ping")
        except ServerTimeout:
            return False
        return isinstance(reply, dict) and reply.get("status") == "ok"

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        """Ping until the server says it is ready (warm-up done; a server whose ping has no ``ready`` field, such
        as GR00T's own, counts as ready); returns that ping reply.

        Raises:
            PolicyError: not ready within ``timeout_s`` (the last reply or timeout in the message).
        """
        deadline = time.monotonic() + timeout_s
        last: Any = None
        while True:
            try:
                last = self.call("ping")
                if isinstance(last, dict) and last.get("status") == "ok" and last.get("ready", True) is True:
                    return last
            except ServerTimeout as exc:
                last = exc
            if time.monotonic() > deadline:
                raise PolicyError(f"policy server at {self.address} not ready within {timeout_s:g} s: {last}")
            time.sleep(0.1)

    def get_action(
        self, observation: dict[str, Any], options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """``(action, info)``: ``action["single_arm"]`` (B, H, 5), ``action["gripper"]`` (B, H, 1), dataset units."""
        reply = self.call("get_action", {"observation": observation, "options": options})
        if not isinstance(reply, list | tuple) or len(reply) != 2:
            raise ServerError(f"get_action reply must be [action, info], got {type(reply).__name__}")
        action, info = reply
        check_action(action)
        return action, info if isinstance(info, dict) else {}

    def reset(self, options: dict[str, Any] | None = None) -> Any:
        return self.call("reset", {"options": options})

    def get_modality_config(self) -> dict[str, Any]:
        return dict(self.call("get_modality_config"))

    def kill(self) -> Any:
        return self.call("kill")
