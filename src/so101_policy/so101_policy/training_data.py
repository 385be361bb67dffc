"""What ACT trains on: a LeRobot v3.0 dataset, or the rendered episode units of a dataset build.

:func:`open_training_data` takes either
- a LeRobot v3.0 dataset directory (``meta/info.json``): features, statistics and fps from its metadata, frames
  decoded from its videos (:mod:`.frame_cache`), or
- a ``so101 dataset build`` output directory whose episode units kept their raw renders
  (``render.keep_frames``: ``episodes/episode_*/frames.npz``): the same rows (state and action in LeRobot units,
  from ``replay.npz``) with the pixels as rendered, no video round trip: what the policy sees at run time.
  Statistics are computed from the rows and, for images, per channel from every 10th frame.
  The units also give the auxiliary pose labels (:func:`aux_pose_labels`, ``train.aux_pose_weight``) from the
  simulator's recorded vial pose (``object_pose/vial``).

``max_episodes`` N > 0 (``train.max_episodes``) keeps the first N episodes: of units the first N in sorted order,
whose rows, poses and statistics (state, action and image) are those N units' alone; of a LeRobot dataset episodes
0..N-1 (:attr:`TrainingData.lerobot_episodes`, LeRobot's ``episodes=`` selection, which filters
``hf_dataset`` to their rows) with the statistics of the whole dataset (``meta.stats``: LeRobot's own with
``--dataset.episodes``; the metadata has no statistics of a selection).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.episode_units import (
    EPISODE_FILE,
    FRAMES_FILE,
    REPLAY_FILE,
    UNIT_GLOB,
    UNITS_DIR,
    FramesFileError,
    open_frames,
)
from so101_core.lerobot_schema import ACTION, OBS_STATE, camera_of, image_key
from so101_core.pixel_levels import level_moments

from .errors import ConfigError
from .frame_cache import HOST, DecodedDataset

JOINT_LABELS = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos",
                "gripper.pos"]  # fmt: skip
_READERS = 8  # unit files read in parallel (numpy's reads and reductions release the GIL)
VIAL_POSE = "object_pose/vial"  # replay.npz: (F, 7) xyz m (world frame) + quaternion wxyz, one row per frame
POSE_LABELS = ("goal_x", "goal_y", "vial_x", "vial_y", "vial_z")  # aux_pose_labels' columns, m
POSE_STD_FLOOR_M = 1e-3  # a label's std below this (e.g. one goal in every episode) normalises by 1 mm


@dataclass(frozen=True)
class TrainingData:
    """``kind`` "lerobot" or "units"; ``features`` and ``stats`` in LeRobot's dataset-metadata form; ``episodes``
    and ``frames`` count what training uses (with ``max_episodes``, the selection)."""

    kind: str
    path: Path
    features: dict[str, Any]
    stats: dict[str, Any]
    fps: float
    episodes: int
    frames: int
    units: tuple[Path, ...] = ()
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # units: state, action (N, 6), episode (N,)
    poses: np.ndarray | None = None  # units: (N, 5) float32 POSE_LABELS m, NaN rows where a unit has no vial pose
    lerobot_episodes: tuple[int, ...] | None = None  # lerobot: LeRobotDataset's episodes= (None: every episode)


def rendered_units(path: Path) -> list[Path]:
    """The complete episode units of a dataset build at ``path`` that kept their frames (sorted)."""
    return sorted(u for u in (Path(path) / UNITS_DIR).glob(UNIT_GLOB) if (u / FRAMES_FILE).is_file())


def open_training_data(path: Path, max_episodes: int = 0) -> TrainingData:
    """The training data at ``path`` (see the module docstring), its first ``max_episodes`` episodes (0: all).

    Raises:
        ConfigError: ``path`` is neither kind (``dataset``), or ``max_episodes`` is negative or more than the
            dataset has (``train.max_episodes``).
    """
    path = Path(path)
    if max_episodes < 0:
        raise ConfigError("train.max_episodes", f"must be >= 0 (0 = every episode), got {max_episodes}")
    if (path / "meta" / "info.json").is_file():
        return _open_lerobot(path, max_episodes)
    units = rendered_units(path)
    if not units:
        raise ConfigError(
            "dataset",
            f"{path} is neither a LeRobot dataset (no meta/info.json) nor a dataset build with rendered frames "
            f"(no {UNITS_DIR}/{UNIT_GLOB}/{FRAMES_FILE}: build it with render.keep_frames: true)",
        )
    units = units[: _selected(max_episodes, len(units), f"{path} has {len(units)} rendered episode units")]
    first = json.loads((units[0] / EPISODE_FILE).read_text(encoding="utf-8"))
    h, w = int(first["height"]), int(first["width"])
    features: dict[str, Any] = {
        k: {"dtype": "float32", "shape": (6,), "names": JOINT_LABELS} for k in (OBS_STATE, ACTION)
    }
    for cam in first["cameras"]:
        features[image_key(cam)] = {"dtype": "video", "shape": (h, w, 3), "names": ["height", "width", "channels"]}
    *rows, poses = _rows(units)  # read once: the statistics here, the training rows in decode_units
    state, action, episode = rows
    stats: dict[str, Any] = {OBS_STATE: _vector_stats(state), ACTION: _vector_stats(action)}
    for cam, cam_stats in _image_stats(units, list(first["cameras"])).items():
        stats[image_key(cam)] = cam_stats
    return TrainingData("units", path, features, stats, float(first["fps"]), len(units), len(state), tuple(units),
                        (state, action, episode), poses)  # fmt: skip


def _open_lerobot(path: Path, max_episodes: int) -> TrainingData:
    """The LeRobot v3.0 dataset at ``path``: features, whole-dataset statistics and fps from its metadata; with
    ``max_episodes`` N > 0 the selection of episodes 0..N-1 and their frame count."""
    from lerobot.datasets import LeRobotDatasetMetadata

    meta = LeRobotDatasetMetadata("local/so101", root=path)
    total = int(meta.total_episodes)
    if max_episodes == 0:
        return TrainingData("lerobot", path, meta.features, meta.stats, float(meta.fps), total,
                            int(meta.total_frames))  # fmt: skip
    n = _selected(max_episodes, total, f"{path} has {total} episodes")
    frames = sum(int(meta.episodes[k]["length"]) for k in range(n))
    return TrainingData("lerobot", path, meta.features, meta.stats, float(meta.fps), n, frames,
                        lerobot_episodes=tuple(range(n)))  # fmt: skip


def _selected(max_episodes: int, available: int, has: str) -> int:
    """How many episodes to train on: ``max_episodes`` (0: all ``available``); ConfigError when there are fewer
    (``has`` says what the dataset has)."""
    if max_episodes > available:
        raise ConfigError("train.max_episodes", f"is {max_episodes} but {has}: lower it (0 = every episode)")
    return max_episodes or available


def _frames(unit: Path, cameras: list[str]) -> dict[str, np.ndarray]:
    """``unit``'s rendered frames of ``cameras`` (ConfigError naming the file when it cannot be read)."""
    try:
        return open_frames(unit / FRAMES_FILE, cameras)
    except FramesFileError as exc:
        raise ConfigError("dataset", str(exc)) from exc


def _rows(units: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """State and action (N, 6) float32 in LeRobot units, the episode index (N,) and the pose labels (N, 5) float32
    (:data:`POSE_LABELS`; NaN for a unit without a vial pose of one row per frame) of every unit's frames."""
    from so101_core.lerobot_units import to_lerobot

    states, actions, episodes, poses = [], [], [], []
    for k, unit in enumerate(units):
        with np.load(unit / REPLAY_FILE) as replay:
            states.append(to_lerobot(replay["q"]).astype(np.float32))
            actions.append(to_lerobot(replay["action"]).astype(np.float32))
            vial = replay[VIAL_POSE] if VIAL_POSE in replay.files else None
        n = len(states[-1])
        episodes.append(np.full(n, k, dtype=np.int64))
        labels = np.full((n, len(POSE_LABELS)), np.nan, dtype=np.float32)
        if vial is not None and vial.shape == (n, 7) and n > 0:
            labels[:, :2] = vial[-1, :2]  # the goal: where the vial ends up
            labels[:, 2:] = vial[:, :3]
        poses.append(labels)
    return np.concatenate(states), np.concatenate(actions), np.concatenate(episodes), np.concatenate(poses)


def aux_pose_labels(data: TrainingData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The auxiliary pose labels of every row, normalised: ((N, 5) float32 (label − mean) / std, mean (5,) m,
    std (5,) m), columns :data:`POSE_LABELS`: the episode's goal (its last row's vial xy) and the row's vial xyz,
    world frame; mean and std over the dataset's rows, std floored at :data:`POSE_STD_FLOOR_M`.

    Raises:
        ConfigError: ``data`` is a LeRobot dataset (no object poses), or a unit has no ``object_pose/vial`` of
            one row per frame (named).
    """
    if data.kind != "units" or data.poses is None or data.rows is None:
        raise ConfigError(
            "train.aux_pose_weight",
            f"needs rendered episode units with object poses; {data.path} is a {data.kind!r} dataset, which has "
            "none: train on the dataset build's directory (render.keep_frames: true) or set aux_pose_weight: 0",
        )
    missing = np.isnan(data.poses).any(axis=1)
    if missing.any():
        unit = data.units[int(data.rows[2][int(np.argmax(missing))])]
        raise ConfigError(
            "train.aux_pose_weight",
            f"{unit / REPLAY_FILE} has no {VIAL_POSE} (F, 7) with one row per frame: rebuild the unit, or set "
            "aux_pose_weight: 0",
        )
    mean = data.poses.mean(0, dtype=np.float64)
    std = np.maximum(data.poses.std(0, dtype=np.float64), POSE_STD_FLOOR_M)
    return ((data.poses - mean) / std).astype(np.float32), mean.astype(np.float32), std.astype(np.float32)


def _vector_stats(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"mean": x.mean(0), "std": x.std(0), "min": x.min(0), "max": x.max(0), "count": np.array([len(x)])}


def _image_stats(units: list[Path], cameras: list[str], stride: int = 10) -> dict[str, dict[str, np.ndarray]]:
    """Per camera, per-channel statistics (3, 1, 1) in [0, 1] of every ``stride``-th frame.

    Exact, from the frames' per-channel histograms of byte values (each unit opened once, units in parallel): the
    float pass it replaces took 14 s for 2 GB of frames on a 2-core VM, and every training slice's cold start paid
    it.
    """

    def histograms(unit: Path) -> np.ndarray:  # (cameras, 3, 256) pixels per channel and byte value
        frames = _frames(unit, cameras)
        return np.stack(
            [[np.bincount(frames[cam][::stride][..., c].ravel(), minlength=256) for c in range(3)] for cam in cameras]
        )

    with ThreadPoolExecutor(max_workers=_READERS) as pool:
        counts = np.sum(list(pool.map(histograms, units)), axis=0)
    stats: dict[str, dict[str, np.ndarray]] = {}
    for cam, per_channel in zip(cameras, counts, strict=True):
        moments = zip(("mean", "std", "min", "max"), level_moments(per_channel), strict=True)
        stats[cam] = {k: (v / 255.0).reshape(3, 1, 1) for k, v in moments}  # levels -> [0, 1]
    return stats


def decode_units(
    data: TrainingData, image_keys: list[str], chunk: int, device: str, extras: dict[str, np.ndarray] | None = None,
    host_frames: bool = False,
) -> DecodedDataset:  # fmt: skip
    """The units' rows with their rendered frames of ``image_keys`` on ``device``, or on the host with
    ``host_frames`` (:class:`.frame_cache.DecodedDataset`), and ``extras``, per-row arrays (N, ...) batched under
    their key, e.g. :func:`aux_pose_labels`' under :data:`.frame_cache.AUX_POSE`.

    Each camera's frames (N, H, W, 3) uint8 are allocated once where they are held and every unit's are copied into
    their rows as it is read (files read in parallel): no second whole-dataset copy on the host.
    """
    import torch

    if data.rows is None:
        raise ConfigError("dataset", f"{data.path}: not a dataset build with rendered frames (kind {data.kind!r})")
    state, action, episode = data.rows
    cams = [camera_of(k) for k in image_keys]
    rows = np.bincount(episode, minlength=len(data.units))
    ends = np.cumsum(rows)  # each unit's rows: starts[k]:ends[k]
    starts = ends - rows
    shape = tuple(data.features[image_keys[0]]["shape"]) if image_keys else ()
    home = HOST if host_frames else device
    images = {cam: torch.empty((len(state), *shape), dtype=torch.uint8, device=home) for cam in cams}

    def load(k: int) -> None:
        unit = data.units[k]
        frames = _frames(unit, cams)
        for cam in cams:
            pixels = frames[cam]
            if pixels.shape != (ends[k] - starts[k], *shape):
                raise ConfigError(
                    "dataset",
                    f"{unit}: {cam} frames {pixels.shape}, expected {(int(ends[k] - starts[k]), *shape)} "
                    "(one frame per row of replay.npz, at the dataset's image size)",
                )
            images[cam][starts[k] : ends[k]].copy_(torch.from_numpy(pixels))

    with ThreadPoolExecutor(max_workers=_READERS) as pool:
        list(pool.map(load, range(len(data.units))))
    keyed = {image_key(c): images[c] for c in cams}
    return DecodedDataset(state, action, episode, keyed, chunk, device, extras, host_frames)
