"""The server against GR00T clients written from each version's published decoder (Isaac-GR00T, read, not copied),
over real ZMQ sockets: N1.6 ``gr00t/policy/server_client.py`` (``PolicyClient``, ``MsgSerializer``) and N1.5
``gr00t/eval/service.py`` (``ExternalRobotInferenceClient``, as ``examples/eval_gr00t_so100.py`` calls it); and the
fine-tuning modality-config file users copy into Isaac-GR00T against :mod:`so101_core.lerobot_schema`."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
import zmq
from so101_core.lerobot_schema import ACTION_HORIZON, ACTION_REPRESENTATION, LANGUAGE_KEY, modality_configs
from so101_core.robot_spec import CAMERA_NAMES
from so101_core.testing.gr00t_rules import ModalityConfig, run_modality_config_file
from so101_policy.replay_policy import ReplayPolicy
from so101_policy.serve import parser, server_config
from so101_policy.server import PolicyServer, ServerConfig

from so101_policy import gr00t as gr00t_recipe

ACTIONS = np.arange(60, dtype=np.float32).reshape(10, 6)
CAMERAS = ("ego", "top")
HORIZON = 4
TASK = "put the vial in the rack"
IMAGE = np.zeros((8, 10, 3), np.uint8)


@dataclass
class N15ModalityConfig:
    """N1.5's pydantic ``ModalityConfig`` fields (``gr00t/data/dataset.py``), all ``model_dump_json`` writes."""

    delta_indices: list[int]
    modality_keys: list[str]


def _encode(obj: Any) -> Any:  # what either client sends of its own: ndarrays
    if isinstance(obj, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, obj, allow_pickle=False)
        return {"__ndarray_class__": True, "as_npy": buf.getvalue()}
    return obj


def decode_n16(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    if "__ModalityConfig_class__" in obj:
        return ModalityConfig(**obj["as_json"])
    if "__ndarray_class__" in obj:
        return np.load(io.BytesIO(obj["as_npy"]), allow_pickle=False)
    return obj


def decode_n15(obj: Any) -> Any:
    if "__ModalityConfig_class__" in obj:
        return N15ModalityConfig(**json.loads(obj["as_json"]))
    if "__ndarray_class__" in obj:
        return np.load(io.BytesIO(obj["as_npy"]), allow_pickle=False)
    return obj


class Client:
    """Both versions' ``call_endpoint``: ``{"endpoint", "data"?}`` out, ``{"error": ...}`` back raises RuntimeError."""

    def __init__(self, port: int, decode: Callable[[Any], Any]) -> None:
        self.decode = decode
        self.sock = zmq.Context.instance().socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, 5000)
        self.sock.connect(f"tcp://127.0.0.1:{port}")

    def call(self, endpoint: str, data: Any = None, requires_input: bool = True) -> Any:
        request: dict[str, Any] = {"endpoint": endpoint}
        if requires_input:
            request["data"] = data
        self.sock.send(msgpack.packb(request, default=_encode))
        reply = msgpack.unpackb(self.sock.recv(), object_hook=self.decode)
        if isinstance(reply, dict) and "error" in reply:
            raise RuntimeError(f"Server error: {reply['error']}")
        return reply


@contextmanager
def serving(protocol: str, decode: Callable[[Any], Any]) -> Iterator[Client]:
    server = PolicyServer(
        ReplayPolicy(ACTIONS, horizon=HORIZON, cameras=CAMERAS), ServerConfig(port=0, protocol=protocol)
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = Client(server.port, decode)
    try:
        yield client
    finally:
        client.sock.close(linger=0)
        server.stop()
        thread.join(5.0)


def test_n16_client_reads_every_reply_of_the_default_server() -> None:
    with serving(ServerConfig().protocol, decode_n16) as client:
        assert client.call("ping", requires_input=False)["status"] == "ok"
        config = client.call("get_modality_config", requires_input=False)
        assert all(isinstance(c, ModalityConfig) for c in config.values())
        assert config["video"].modality_keys == list(CAMERAS)
        assert config["state"].modality_keys == config["action"].modality_keys == ["single_arm", "gripper"]
        assert config["action"].delta_indices == list(range(HORIZON))
        assert config["language"].modality_keys == ["annotation.human.task_description"] == [LANGUAGE_KEY]
        assert config["video"].delta_indices == config["state"].delta_indices == config["language"].delta_indices == [0]
        obs = {
            "video": {cam: IMAGE[None, None] for cam in CAMERAS},
            "state": {"single_arm": np.zeros((1, 1, 5), np.float32), "gripper": np.zeros((1, 1, 1), np.float32)},
            "language": {"annotation.human.task_description": [[TASK]]},
        }
        action, info = tuple(client.call("get_action", {"observation": obs, "options": {"step": 2}}))
        assert action["single_arm"].shape == (1, HORIZON, 5) and action["gripper"].shape == (1, HORIZON, 1)
        np.testing.assert_array_equal(action["single_arm"][0], ACTIONS[2:6, :5])
        assert info == {"step": 2}
        assert client.call("reset", {"options": None}) == {}


def test_n15_client_reads_every_reply_of_the_n15_server() -> None:
    with serving("n1.5", decode_n15) as client:
        config = client.call("get_modality_config", requires_input=False)
        assert config["video"] == N15ModalityConfig([0], ["video.ego", "video.top"])
        assert config["state"] == N15ModalityConfig([0], ["state.single_arm", "state.gripper"])
        assert config["action"] == N15ModalityConfig(list(range(HORIZON)), ["action.single_arm", "action.gripper"])
        assert config["language"] == N15ModalityConfig([0], ["annotation.human.task_description"])
        state = np.arange(6, dtype=np.float64)
        obs = {  # eval_gr00t_so100.py's unbatched observation: (T, ...) arrays, float64 state, [str]
            **{f"video.{cam}": IMAGE[np.newaxis] for cam in CAMERAS},
            "state.single_arm": state[:5][np.newaxis, :],
            "state.gripper": state[5:6][np.newaxis, :],
            "annotation.human.task_description": [TASK],
        }
        action = client.call("get_action", obs)
        assert set(action) == {"action.single_arm", "action.gripper"}
        for i in range(HORIZON):  # how that script reads the chunk
            row = np.concatenate([np.atleast_1d(action[f"action.{key}"][i]) for key in ("single_arm", "gripper")])
            np.testing.assert_array_equal(row, ACTIONS[i])  # the replay's first call: its first chunk
        batched = {k: np.repeat(v[None], 2, axis=0) if isinstance(v, np.ndarray) else v * 2 for k, v in obs.items()}
        action = client.call("get_action", batched)
        assert action["action.single_arm"].shape == (2, HORIZON, 5)
        assert action["action.gripper"].shape == (2, HORIZON, 1)
        with pytest.raises(RuntimeError, match=r"state\.gripper"):
            client.call("get_action", {k: v for k, v in obs.items() if k != "state.gripper"})
        with pytest.raises(RuntimeError, match="must be 2 str"):
            client.call("get_action", {**batched, "annotation.human.task_description": [TASK]})
        assert client.call("ping", requires_input=False)["status"] == "ok"  # serving on after the bad ones


def test_each_versions_decoder_refuses_the_other_versions_modality_config() -> None:
    with serving("n1.6", decode_n15) as client, pytest.raises(TypeError, match="must be str"):
        client.call("get_modality_config", requires_input=False)
    with serving("n1.5", decode_n16) as client, pytest.raises(TypeError, match="must be a mapping"):
        client.call("get_modality_config", requires_input=False)


def test_serve_speaks_n16_unless_told_n15() -> None:
    assert server_config(parser().parse_args(["--replay", "a.npy"])).protocol == "n1.6"
    assert server_config(parser().parse_args(["--replay", "a.npy", "--protocol", "n1.5"])).protocol == "n1.5"
    with pytest.raises(SystemExit):
        parser().parse_args(["--replay", "a.npy", "--protocol", "n1.7"])
    with pytest.raises(ValueError, match=r"protocol must be one of n1\.6, n1\.5"):
        ServerConfig(protocol="n1.7")


def test_finetune_modality_config_file_agrees_with_the_schema() -> None:
    path = Path(gr00t_recipe.__file__).parent / "so101_modality_config.py"
    registered = run_modality_config_file(path)
    assert set(registered) == {"new_embodiment"}
    config = registered["new_embodiment"]
    expected = modality_configs(CAMERA_NAMES, ACTION_HORIZON)
    assert set(config) == set(expected)
    for modality, want in expected.items():
        assert config[modality].delta_indices == list(want.delta_indices), modality
        assert config[modality].modality_keys == list(want.modality_keys), modality
    reps = [c.rep.name for c in config["action"].action_configs or []]
    assert reps == [ACTION_REPRESENTATION[key] for key in config["action"].modality_keys]
