"""A cold server (issue 23, defect 2): the model is warmed up through the request path before the server says it
is ready; a client asking meanwhile is told so, and ``so101 serve`` announces "serving on" only afterwards.
Real ZMQ sockets on loopback."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zmq
from nodegraph.transport.zenoh.config import free_port
from so101_policy.client import PolicyClient
from so101_policy.errors import PolicyError, ServerError
from so101_policy.protocol import observation
from so101_policy.replay_policy import ReplayPolicy
from so101_policy.serve import parser, serve
from so101_policy.server import PolicyServer, ServerConfig

ACTIONS = np.arange(60, dtype=np.float32).reshape(10, 6)
TOKEN = "s3cret"


class ColdBackend(ReplayPolicy):
    """A model initialising while a client already asks: its first ``wait_calls`` calls return only once a
    client request is queued at the server or ``asked`` is set. It trains on 10 × 8 px images of camera "top"."""

    def __init__(self, wait_calls: int) -> None:
        super().__init__(ACTIONS, horizon=4, cameras=("top",))
        self.server: PolicyServer | None = None
        self.wait_calls = wait_calls
        self.seen: list[tuple[int, ...]] = []
        self.resets = 0
        self.asked = threading.Event()

    def image_size(self) -> tuple[int, int]:
        return 10, 8

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        self.seen.append(observation["video"]["top"].shape)
        if len(self.seen) <= self.wait_calls:
            assert self.server is not None  # called in the server's own thread: polling its socket is safe
            deadline = time.monotonic() + 30.0
            while not self.server._socket.poll(10, zmq.POLLIN) and not self.asked.is_set():
                assert time.monotonic() < deadline, "no client request arrived"
        return super().get_action(observation, options)

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        self.resets += 1
        return super().reset(options)


def make_obs() -> dict[str, Any]:
    return observation({"top": np.zeros((8, 10, 3), np.uint8)}, np.zeros(6), "put the vial in the rack")


def test_warm_up_goes_through_the_request_path_before_the_server_is_ready() -> None:
    from so101_policy.backend import warmup_observation

    backend = ColdBackend(wait_calls=2)
    server = PolicyServer(backend, ServerConfig(port=0, api_token=TOKEN))
    backend.server = server
    early: dict[str, Any] = {}

    def early_client() -> None:  # asks while the model warms up
        with PolicyClient(port=server.port, api_token=TOKEN, timeout_ms=30000) as client:
            early["ping"] = client.call("ping")
            with pytest.raises(ServerError) as err:
                client.get_action(make_obs())
            early["get_action"] = str(err.value)
        backend.asked.set()

    asker = threading.Thread(target=early_client, daemon=True)
    asker.start()
    warm = server.warm_up(warmup_observation(backend), runs=3)
    asker.join(10.0)
    assert early["ping"]["ready"] is False and early["ping"]["message"] == "Server is warming up"
    assert "not ready: the server is warming up" in early["get_action"]
    assert warm.runs == 3 and warm.total_s >= warm.last_s > 0 and server.warmup is warm
    assert backend.seen == [(1, 1, 8, 10, 3)] * 3 and backend.resets == 1  # the client's call never ran
    assert server.requests == 3 + 2  # the warm-up requests went through handle(), as a client's do

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with PolicyClient(port=server.port, api_token=TOKEN, timeout_ms=30000) as client:
            ready = client.wait_ready(10.0)
            assert ready["ready"] is True and ready["warmup_runs"] == 3 and ready["warmup_s"] == warm.total_s
            client.get_action(make_obs())
            assert len(backend.seen) == 4
    finally:
        server.stop()
        thread.join(5.0)


def test_a_failing_warm_up_and_a_server_never_warmed() -> None:
    class Broken(ColdBackend):
        def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
            raise RuntimeError("CUDA out of memory")

    server = PolicyServer(Broken(0), ServerConfig(port=0))
    with pytest.raises(ServerError, match="warm-up inference 1 of 3 failed: RuntimeError: CUDA out of memory"):
        server.warm_up(make_obs(), runs=3)
    assert server.warmup is None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with PolicyClient(port=server.port, timeout_ms=5000) as client:
            assert client.ping()  # alive, but not ready
            with pytest.raises(PolicyError, match=r"not ready within 0\.3 s"):
                client.wait_ready(0.3)
    finally:
        server.stop()
        thread.join(5.0)


def test_serve_announces_only_after_warm_up(tmp_path: Path) -> None:
    """``so101 serve`` (the command the evaluator starts): "serving on" comes after the warm-up, and a ping
    sent on that line says ready."""
    np.save(tmp_path / "actions.npy", ACTIONS)
    port = free_port()
    argv = ["--replay", str(tmp_path / "actions.npy"), "--cameras", "top", "--horizon", "4", "--port", str(port)]
    args = parser().parse_args([*argv, "--token", TOKEN])
    lines: list[str] = []
    replies: dict[str, Any] = {}

    def client_side() -> None:
        try:
            with PolicyClient(port=port, api_token=TOKEN, timeout_ms=30000) as client:
                replies["ping"] = client.call("ping")
                replies["action"] = client.get_action(make_obs())
                client.kill()
        except Exception as exc:
            replies["error"] = exc
            os.kill(os.getpid(), signal.SIGTERM)  # serve() stops on it

    def announce(line: str) -> None:
        lines.append(line)
        threading.Thread(target=client_side, daemon=True).start()

    assert serve(args, announce) == 0
    assert "error" not in replies, replies
    assert len(lines) == 1 and lines[0].startswith(
        f"serving on tcp://127.0.0.1:{port} (GR00T n1.6 protocol, cameras ['top']"
    )
    assert "horizon 4;" in lines[0]
    assert "warm-up 3 inferences in" in lines[0]
    assert replies["ping"]["ready"] is True and replies["ping"]["warmup_runs"] == 3
    assert replies["action"][1] == {"step": 0}  # the warm-up's calls were reset away
    assert signal.getsignal(signal.SIGTERM) is not None and signal.getsignal(signal.SIGINT) is not None
