"""A tiny LeRobot v3.0 dataset with the so101 features, made with ``LeRobotDataset.create`` (a test fixture, not
an exporter): ``observation.state`` (6), ``action`` (6) in LeRobot units, ``observation.images.{ego,side,top}``
video, fps 30, a task string. The action is a smooth function of time that the state lags by one step, and the
images carry the phase as brightness, so a policy can learn it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

NAMES = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos", "gripper.pos"]
TASK = "put the vial in the rack"


def trajectory(n: int, episode: int) -> np.ndarray:
    """(n, 6) LeRobot units (degrees for the arm, 0..100 for the gripper)."""
    t = np.arange(n, dtype=np.float64) / 30.0
    arm = 20.0 * np.sin(2 * np.pi * 0.5 * t[:, None] + np.arange(5)[None] + 0.3 * episode)
    grip = 50.0 + 40.0 * np.sin(2 * np.pi * 0.25 * t + episode)[:, None]
    return np.concatenate([arm, grip], axis=1).astype(np.float32)


def make_dataset(root: Path, episodes: int = 2, frames: int = 30, height: int = 48, width: int = 64) -> Path:
    from lerobot.datasets import LeRobotDataset

    features: dict[str, dict] = {
        "observation.state": {"dtype": "float32", "shape": (6,), "names": NAMES},
        "action": {"dtype": "float32", "shape": (6,), "names": NAMES},
    }
    for cam in ("ego", "side", "top"):
        features[f"observation.images.{cam}"] = {
            "dtype": "video",
            "shape": (height, width, 3),
            "names": ["height", "width", "channels"],
        }
    ds = LeRobotDataset.create("local/so101_test", 30, features, root=root, robot_type="so_follower")
    for ep in range(episodes):
        actions = trajectory(frames + 1, ep)
        for i in range(frames):
            frame: dict = {"observation.state": actions[i], "action": actions[i + 1], "task": TASK}
            level = np.uint8(int(127 + 120 * np.sin(i / 5.0)))
            for k, cam in enumerate(("ego", "side", "top")):
                img = np.full((height, width, 3), level, dtype=np.uint8)
                img[:, : width // (k + 2)] = 255 - level
                frame[f"observation.images.{cam}"] = img
            ds.add_frame(frame)
        ds.save_episode()
    ds.finalize()
    return root
