"""A policy server whose behaviour a test switches at run time (good, NaN, out of range, late), served on a
real ZMQ socket in a thread; ``stop()`` kills it (a dead server), ``start()`` brings it back on the same port."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from so101_policy.server import PolicyServer, ServerConfig


class ScriptedBackend:
    """Chunk = the observed state (LeRobot units) + ``offset`` for every row, with row t's shoulder_pan
    increased by ``ramp`` · t when set; ``mode`` breaks it on purpose."""

    def __init__(self, cameras: tuple[str, ...], horizon: int = 16) -> None:
        self.cameras, self.horizon = cameras, horizon
        self.mode = "good"
        self.offset = np.zeros(6, np.float32)
        self.ramp = 0.0
        self.calls = 0
        self.steps: list[int] = []
        self.resets = 0
        self.good_calls: int | None = None  # after this many calls the mode turns "late"

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        self.calls += 1
        if self.good_calls is not None and self.calls > self.good_calls:
            self.mode = "late"
        self.steps.append(int((options or {}).get("step", -1)))
        state = np.concatenate([observation["state"]["single_arm"][0, -1], observation["state"]["gripper"][0, -1]])
        chunk = np.repeat((state + self.offset)[None], self.horizon, axis=0).astype(np.float32)
        chunk[:, 0] += self.ramp * np.arange(self.horizon)
        if self.mode == "nan":
            chunk[3, 2] = np.nan
        elif self.mode == "range":
            chunk[:, 1] = 720.0  # degrees: far outside any joint limit
        elif self.mode == "jump":
            chunk[:, 0] += 50.0  # degrees: a sudden 0.87 rad jump of shoulder_pan
        elif self.mode == "lead":
            chunk[:, 4] += 45.0  # degrees: wrist_roll leads by 0.79 rad, as in the demos (accepted)
        elif self.mode == "late":
            time.sleep(1.0)
        return {"single_arm": chunk[None, :, :5], "gripper": chunk[None, :, 5:]}, {}

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        self.resets += 1
        return {}


class FakeServer:
    def __init__(self, backend: ScriptedBackend, port: int = 0) -> None:
        self.backend = backend
        self.port = port
        self.server: PolicyServer | None = None
        self.thread: threading.Thread | None = None
        self.start()

    def start(self) -> None:
        self.server = PolicyServer(self.backend, ServerConfig(port=self.port))
        self.port = self.server.port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.server is not None and self.thread is not None:
            self.server.stop()
            self.thread.join(5.0)
            self.server = None
