"""The zenoh router: a real router process on a free loopback port, real client sessions through it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading

import pytest
import zenoh
from launch_test_support import pid_alive, wait_gone
from nodegraph.transport.zenoh.config import (
    DEFAULT_ENDPOINT,
    ENDPOINT_ENV,
    EndpointError,
    endpoint_accepts_connections,
    router_endpoint,
    tcp_address,
)
from nodegraph.transport.zenoh.router import READY_PREFIX, RouterPortInUseError, RouterProcess

pytestmark = pytest.mark.timeout(60)


def client(endpoint: str) -> zenoh.Session:
    config = zenoh.Config()
    for key, value in {
        "mode": "client",
        "connect/endpoints": [endpoint],
        "scouting/multicast/enabled": False,
    }.items():
        config.insert_json5(key, json.dumps(value))
    return zenoh.open(config)


def test_endpoint_defaults_and_override() -> None:
    assert router_endpoint({}) == DEFAULT_ENDPOINT == "tcp/127.0.0.1:7447"
    assert router_endpoint({ENDPOINT_ENV: " tcp/127.0.0.1:9000 "}) == "tcp/127.0.0.1:9000"
    assert router_endpoint({ENDPOINT_ENV: ""}) == DEFAULT_ENDPOINT
    assert tcp_address("tcp/127.0.0.1:7447") == ("127.0.0.1", 7447)
    assert tcp_address("tcp/[::1]:7448#iface=lo") == ("::1", 7448)
    for bad in ("udp/127.0.0.1:7447", "tcp/127.0.0.1", "127.0.0.1:7447", "tcp/host:port"):
        with pytest.raises(EndpointError, match="tcp/HOST:PORT"):
            tcp_address(bad)


def test_router_routes_messages_and_stops(endpoint: str) -> None:
    lines: list[str] = []
    with RouterProcess(endpoint, on_output=lines.append) as router:
        assert router.running and endpoint_accepts_connections(endpoint)
        assert lines[0].startswith(f"{READY_PREFIX} {endpoint}")
        received = threading.Event()
        sub_session, pub_session = client(endpoint), client(endpoint)
        try:
            got: list[str] = []

            def on_sample(sample: zenoh.Sample) -> None:
                got.append(sample.payload.to_string())
                received.set()

            subscriber = sub_session.declare_subscriber("so101/test/**", on_sample)
            for _ in range(50):  # the subscription needs a moment to reach the router
                pub_session.put("so101/test/hello", "hi")
                if received.wait(0.1):
                    break
            assert got and got[0] == "hi"
            subscriber.undeclare()
        finally:
            sub_session.close()
            pub_session.close()
        pid = router.pid
    assert router.poll() == 0
    assert pid is not None and not wait_gone([pid])
    assert not endpoint_accepts_connections(endpoint)
    assert lines[-1] == "zenoh router stopped"


def test_port_taken_is_a_clear_error(endpoint: str) -> None:
    host, port = tcp_address(endpoint)
    with socket.socket() as squatter:
        squatter.bind((host, port))
        squatter.listen()
        router = RouterProcess(endpoint)
        with pytest.raises(RouterPortInUseError, match=rf"{endpoint} is already in use.*--no-router"):
            router.start()
        assert router.pid is None


def test_port_bound_but_not_listening_is_reported_as_in_use(endpoint: str) -> None:
    host, port = tcp_address(endpoint)
    with socket.socket() as squatter:
        squatter.bind((host, port))  # bound, not listening: only the router's own bind fails
        with pytest.raises(RouterPortInUseError, match="already in use"):
            RouterProcess(endpoint).start()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_router_program_exits_cleanly_on_signal(endpoint: str, sig: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "nodegraph.transport.zenoh.router", "--listen", endpoint],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith(f"{READY_PREFIX} {endpoint}")
        process.send_signal(sig)
        assert process.wait(10) == 0
        assert process.stdout.read().strip() == "zenoh router stopped"
    finally:
        if pid_alive(process.pid):
            process.kill()
        process.wait()
