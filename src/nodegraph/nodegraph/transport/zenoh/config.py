"""Where the zenoh router listens, shared by the router, the launcher and the nodes.

``SO101_ZENOH_ENDPOINT`` overrides the default ``tcp/127.0.0.1:7447`` everywhere (rmw_zenoh_cpp's router
port, bound to loopback only). Import-light on purpose: no zenoh import here.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

ENDPOINT_ENV = "SO101_ZENOH_ENDPOINT"
DEFAULT_ENDPOINT = "tcp/127.0.0.1:7447"


class EndpointError(ValueError):
    """A zenoh endpoint string cannot be used."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the OS picks it; nothing holds it for the caller): a router or a
    policy server of one's own, apart from any other graph on the machine."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def free_endpoint(host: str = "127.0.0.1") -> str:
    """``tcp/HOST:PORT`` on a :func:`free_port`: a router endpoint no other graph uses."""
    return f"tcp/{host}:{free_port(host)}"


def router_endpoint(environ: Mapping[str, str] | None = None) -> str:
    """The router endpoint: ``$SO101_ZENOH_ENDPOINT`` when set and non-empty, else ``DEFAULT_ENDPOINT``."""
    env = os.environ if environ is None else environ
    return env.get(ENDPOINT_ENV, "").strip() or DEFAULT_ENDPOINT


def tcp_address(endpoint: str) -> tuple[str, int]:
    """``tcp/HOST:PORT[?meta][#conf]`` → ``(HOST, PORT)``; IPv6 hosts in brackets (``tcp/[::1]:7447``)."""
    proto, sep, rest = endpoint.partition("/")
    if not sep or proto != "tcp":
        raise EndpointError(f"expected a tcp/HOST:PORT endpoint, got {endpoint!r}")
    address = rest.split("?", 1)[0].split("#", 1)[0]
    host, sep, port_text = address.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise EndpointError(f"expected a tcp/HOST:PORT endpoint, got {endpoint!r}")
    return host.strip("[]"), int(port_text)


def endpoint_accepts_connections(endpoint: str, timeout_s: float = 2.0) -> bool:
    """True when something accepts TCP connections at ``endpoint`` (a router, or anything else). A closed port
    answers at once; ``timeout_s`` (s) outlasts one SYN retransmission (1 s), which a loaded router whose accept
    queue is full may need (0.2 s could miss a running router on a loaded CI host)."""
    host, port = tcp_address(endpoint)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
