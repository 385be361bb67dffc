"""What ACT trains on: a LeRobot v3.0 dataset, or the rendered episode units of a dataset build.

:func:`open_training_data` takes either
- a LeRobot v3.0 dataset directory (``meta/info.json``): features, statistics and fps from its metadata, frames
  decoded from its videos (:mod:`.frame_cache`), or
- a ``so101 dataset build`` output directory whose episode units kept their raw renders
  (``render.keep_frames``: ``episodes/episode_*/frames.npz``): the same rows (state and action in LeRobot units,
  from ``replay.npz``) with the pixels as rendered, no video round trip: what the policy sees at run time.
  Statistics are computed from the rows and, for images, per channel from every 10th frame.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.lerobot_schema import ACTION, OBS_STATE, camera_of, image_key

from .errors import ConfigError
from .frame_cache import DecodedDataset

FRAMES_FILE = "frames.npz"  # so101_dataset.units.FRAMES_FILE
JOINT_LABELS = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos",
                "gripper.pos"]  # fmt: skip


@dataclass(frozen=True)
class TrainingData:
    """``kind`` "lerobot" or "units"; ``features`` and ``stats`` in LeRobot's dataset-metadata form."""

    kind: str
    path: Path
    features: dict[str, Any]
    stats: dict[str, Any]
    fps: float
    episodes: int
    frames: int
    units: tuple[Path, ...] = ()


def rendered_units(path: Path) -> list[Path]:
    """The complete episode units of a dataset build at ``path`` that kept their frames (sorted)."""
    return sorted(u for u in (Path(path) / "episodes").glob("episode_*") if (u / FRAMES_FILE).is_file())


def open_training_data(path: Path) -> TrainingData:
    """The training data at ``path`` (see the module docstring); ConfigError when it is neither kind."""
    path = Path(path)
    if (path / "meta" / "info.json").is_file():
        from lerobot.datasets import LeRobotDatasetMetadata

        meta = LeRobotDatasetMetadata("local/so101", root=path)
        return TrainingData("lerobot", path, meta.features, meta.stats, float(meta.fps), meta.total_episodes,
                            meta.total_frames)  # fmt: skip
    units = rendered_units(path)
    if not units:
        raise ConfigError(
            f"{path} is neither a LeRobot dataset (no meta/info.json) nor a dataset build with rendered frames "
            f"(no episodes/episode_*/{FRAMES_FILE}: build it with render.keep_frames: true)"
        )
    first = json.loads((units[0] / "episode.json").read_text(encoding="utf-8"))
    h, w = int(first["height"]), int(first["width"])
    features: dict[str, Any] = {
        k: {"dtype": "float32", "shape": (6,), "names": JOINT_LABELS} for k in (OBS_STATE, ACTION)
    }
    for cam in first["cameras"]:
        features[image_key(cam)] = {"dtype": "video", "shape": (h, w, 3), "names": ["height", "width", "channels"]}
    state, action, _ = _rows(units)
    stats: dict[str, Any] = {OBS_STATE: _vector_stats(state), ACTION: _vector_stats(action)}
    for cam in first["cameras"]:
        stats[image_key(cam)] = _image_stats(units, cam)
    return TrainingData("units", path, features, stats, float(first["fps"]), len(units), len(state), tuple(units))


def _rows(units: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """State and action (N, 6) float32 in LeRobot units and the episode index (N,) of every unit's frames."""
    from so101_core.lerobot_units import to_lerobot

    states, actions, episodes = [], [], []
    for k, unit in enumerate(units):
        with np.load(unit / "replay.npz") as replay:
            states.append(to_lerobot(replay["q"]).astype(np.float32))
            actions.append(to_lerobot(replay["action"]).astype(np.float32))
        episodes.append(np.full(len(states[-1]), k, dtype=np.int64))
    return np.concatenate(states), np.concatenate(actions), np.concatenate(episodes)


def _vector_stats(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"mean": x.mean(0), "std": x.std(0), "min": x.min(0), "max": x.max(0), "count": np.array([len(x)])}


def _image_stats(units: list[Path], camera: str, stride: int = 10) -> dict[str, np.ndarray]:
    """Per-channel statistics (3, 1, 1) in [0, 1] of every ``stride``-th frame of ``camera``."""
    total = np.zeros(3)
    square = np.zeros(3)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    count = 0
    for unit in units:
        with np.load(unit / FRAMES_FILE) as frames:
            x = frames[camera][::stride].reshape(-1, 3).astype(np.float64) / 255.0
        total += x.sum(0)
        square += (x * x).sum(0)
        lo, hi = np.minimum(lo, x.min(0)), np.maximum(hi, x.max(0))
        count += len(x)
    mean = total / count
    std = np.sqrt(np.maximum(square / count - mean * mean, 0.0))
    return {k: v.reshape(3, 1, 1) for k, v in (("mean", mean), ("std", std), ("min", lo), ("max", hi))}


def decode_units(data: TrainingData, image_keys: list[str], chunk: int, device: str) -> DecodedDataset:
    """The units' rows with their rendered frames of ``image_keys`` on ``device`` (files read in parallel)."""
    state, action, episode = _rows(list(data.units))
    cams = [camera_of(k) for k in image_keys]

    def load(unit: Path) -> dict[str, np.ndarray]:
        with np.load(unit / FRAMES_FILE) as frames:
            return {cam: frames[cam] for cam in cams}

    with ThreadPoolExecutor(max_workers=8) as pool:
        per_unit = list(pool.map(load, data.units))
    images = {image_key(cam): np.concatenate([u[cam] for u in per_unit]) for cam in cams}
    for key, frames in images.items():
        if len(frames) != len(state):
            raise ConfigError(f"{data.path}: {len(frames)} frames of {key} for {len(state)} rows")
    return DecodedDataset(state, action, episode, images, chunk, device)
