"""The policy server and client through real ZMQ sockets on loopback: every endpoint, tokens, bad input."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from typing import Any

import msgpack
import numpy as np
import pytest
import zmq
from nodegraph.testing import wait_until
from nodegraph.transport.zenoh.config import free_port
from so101_policy.client import PolicyClient
from so101_policy.errors import ProtocolError, ServerError, ServerTimeout
from so101_policy.protocol import NDARRAY_TAG, observation, pack, unpack
from so101_policy.replay_policy import ReplayPolicy
from so101_policy.server import PolicyServer, ServerConfig

ACTIONS = np.arange(60, dtype=np.float32).reshape(10, 6)
TOKEN = "s3cret"


def make_obs(b: int = 1) -> dict[str, Any]:
    obs = observation({"top": np.zeros((8, 10, 3), np.uint8)}, np.zeros(6), "put the vial in the rack")
    if b > 1:
        obs["video"]["top"] = np.repeat(obs["video"]["top"], b, axis=0)
        obs["state"] = {k: np.repeat(v, b, axis=0) for k, v in obs["state"].items()}
        obs["language"]["annotation.human.task_description"] *= b
    return obs


@pytest.fixture
def served() -> Iterator[PolicyServer]:
    server = PolicyServer(
        ReplayPolicy(ACTIONS, horizon=4, cameras=("top",)),
        ServerConfig(port=0, api_token=TOKEN, max_message_bytes=64 * 1024),
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.stop()
    thread.join(5.0)


def raw_request(port: int, payload: bytes, timeout_ms: int = 3000) -> Any:
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
    sock.connect(f"tcp://127.0.0.1:{port}")
    try:
        sock.send(payload)
        return unpack(sock.recv())
    finally:
        sock.close()


def test_every_endpoint(served: PolicyServer) -> None:
    with PolicyClient(port=served.port, api_token=TOKEN, timeout_ms=3000) as client:
        assert client.ping()
        action, info = client.get_action(make_obs(), {"step": 3})
        assert action["single_arm"].shape == (1, 4, 5) and action["gripper"].shape == (1, 4, 1)
        assert action["single_arm"].dtype == np.float32
        np.testing.assert_array_equal(action["single_arm"][0, 0], ACTIONS[3, :5])
        np.testing.assert_array_equal(action["gripper"][0, :, 0], ACTIONS[3:7, 5])
        assert info == {"step": 3}
        action, _ = client.get_action(make_obs(b=2))  # batched, no step: counts calls since reset
        assert action["single_arm"].shape == (2, 4, 5)
        action, info = client.get_action(make_obs(b=2), {"step": [1, 5]})  # one step per row
        np.testing.assert_array_equal(action["single_arm"][:, 0], ACTIONS[[1, 5], :5])
        assert info == {"step": [1, 5]}
        with pytest.raises(ServerError, match="2 steps >= 0, one per row"):
            client.get_action(make_obs(b=2), {"step": [1]})
        assert client.reset() == {}
        config = client.get_modality_config()
        assert set(config) == {"video", "state", "action", "language"}
        assert config["action"]["__ModalityConfig_class__"] is True
        assert config["action"]["as_json"]["delta_indices"] == [0, 1, 2, 3]
        assert client.kill()["status"] == "ok"
    wait_until(lambda: served._socket.closed, 10.0, "the server's socket closed", 0.05)


def test_wrong_or_missing_token_is_an_error_reply(served: PolicyServer) -> None:
    for token in ("wrong", None):
        with PolicyClient(port=served.port, api_token=token, timeout_ms=3000) as client:
            with pytest.raises(ServerError, match="unauthorized"):
                client.call("ping")
            with pytest.raises(ServerError, match="unauthorized"):
                client.kill()
    with PolicyClient(port=served.port, api_token=TOKEN, timeout_ms=3000) as client:
        assert client.ping()  # still serving


def test_kill_needs_a_configured_token() -> None:
    server = PolicyServer(ReplayPolicy(ACTIONS), ServerConfig(port=0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with PolicyClient(port=server.port, timeout_ms=3000) as client:
            with pytest.raises(ServerError, match="kill refused"):
                client.kill()
            assert client.ping()
    finally:
        server.stop()
        thread.join(5.0)


def test_bad_requests_get_error_replies_and_the_server_lives_on(served: PolicyServer) -> None:
    port = served.port
    # malformed msgpack
    assert "malformed msgpack" in raw_request(port, b"\xc1\xff\x00garbage")["error"]
    # not a map
    assert "must be a map" in raw_request(port, pack([1, 2, 3]))["error"]
    # over the size limit (64 KiB here), under zmq's hard cap
    big = pack({"endpoint": "ping", "api_token": TOKEN, "data": {"pad": b"x" * 100_000}})
    assert "exceeds the limit" in raw_request(port, big)["error"]
    # a pickled (object) array is refused, not unpickled
    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    evil = msgpack.packb(
        {"endpoint": "ping", "api_token": TOKEN, "data": {"x": {NDARRAY_TAG: True, "as_npy": buf.getvalue()}}}
    )
    assert "refused ndarray" in raw_request(port, evil)["error"]
    # unknown endpoint
    assert "unknown endpoint" in raw_request(port, pack({"endpoint": "nope", "api_token": TOKEN}))["error"]
    with PolicyClient(port=port, api_token=TOKEN, timeout_ms=3000) as client:
        # wrong shapes, dtypes, missing keys, language format
        obs = make_obs()
        obs["state"]["single_arm"] = np.zeros((1, 1, 4), np.float32)
        with pytest.raises(ServerError, match=r"single_arm must be \(B, T, 5\)"):
            client.get_action(obs)
        obs = make_obs()
        obs["video"]["top"] = obs["video"]["top"].astype(np.float32)
        with pytest.raises(ServerError, match=r"video\.top must be uint8"):
            client.get_action(obs)
        obs = make_obs()
        del obs["video"]["top"]
        with pytest.raises(ServerError, match="lacks 'top'"):
            client.get_action(obs)
        obs = make_obs()
        obs["language"]["annotation.human.task_description"] = ["flat"]
        with pytest.raises(ServerError, match=r"\[\[str\]\]"):
            client.get_action(obs)
        assert client.ping()
    assert served.errors >= 9


def test_pack_refuses_object_arrays() -> None:
    with pytest.raises(ProtocolError, match="object arrays"):
        pack({"x": np.array([None], dtype=object)})
    assert unpack(pack({"x": np.float32(1.5)})) == {"x": 1.5}  # numpy scalars travel as Python numbers


def test_client_times_out_on_a_dead_server() -> None:
    sock = zmq.Context.instance().socket(zmq.REP)  # bound but never answers: a hung server
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    try:
        client = PolicyClient(port=port, timeout_ms=300)
        start = time.monotonic()
        with pytest.raises(ServerTimeout, match="did not answer 'ping' within 300 ms"):
            client.call("ping")
        assert time.monotonic() - start < 2.0
        assert not client.ping()  # the socket was recreated: a second call times out again, no EFSM error
    finally:
        sock.close(linger=0)
    client = PolicyClient(port=free_port(), timeout_ms=200)  # nobody listening at all
    with pytest.raises(ServerTimeout):
        client.get_action(make_obs())
    client.close()


def test_server_binds_localhost_by_default() -> None:
    assert ServerConfig().host == "127.0.0.1" and ServerConfig().port == 5555
    with pytest.raises(ValueError, match="api_token"):
        ServerConfig(api_token="")
