"""A LeRobot v3.0 dataset decoded once into memory, batched on the training device.

LeRobot's ``__getitem__`` seeks and decodes each video frame on its own; on a GPU machine that, not the model,
bounds ACT's training rate. When the decoded frames fit in memory, :class:`DecodedDataset` reads the parquet rows
through ``LeRobotDataset.hf_dataset``, decodes every camera's MP4 files front to back once (PyAV; the files in
parallel threads), keeps the frames as uint8 tensors on the device and builds batches by indexing, with indices
drawn on the device: the same items LeRobot returns with ``delta_timestamps={"action": [0, 1/fps, ...]}`` (an
action chunk padded with the episode's last action, ``action_is_pad`` marking the padding) and images as float32
(C, H, W) in [0, 1].

Where the frames are held (:func:`cache_home`): on the training device when they fit there beside training's own
memory; else, training on a GPU, in host memory (``host_frames``): each batch's frames are gathered on the host
into pinned memory and copied over one batch ahead, in a thread, while the GPU trains on the batch before (the same
batches in the same order: the order is drawn on the device either way).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.lerobot_schema import ACTION, OBS_STATE

from .errors import PolicyError

AUX_POSE = "aux.pose"  # a batch's auxiliary pose labels (B, 5), normalised (training_data.aux_pose_labels)
HOST = "cpu"
HOST_SHARE = 0.8  # of the host's available memory a frame cache may take
GPU_HEADROOM = 0.25  # of a GPU's free memory left to training itself (activations, optimizer: ~20 GB at batch 512)
GPU_HEADROOM_MIN_GB = 8.0  # and at least this much


def free_bytes(device: str) -> float:
    """Free memory (bytes) of ``device``: the GPU's, or the host's available RAM (inf without psutil)."""
    if device.startswith("cuda"):
        import torch

        return float(torch.cuda.mem_get_info(torch.device(device))[0])
    try:
        import psutil
    except ImportError:
        return math.inf
    return float(psutil.virtual_memory().available)


def cache_home(need: int, device: str, limit_bytes: float = math.inf) -> str | None:
    """Where ``need`` bytes of decoded frames are held to train on ``device``, given a limit (``frame_cache_gb``):
    ``device`` itself when they fit there (a GPU: its free memory less :data:`GPU_HEADROOM` of it, at least
    :data:`GPU_HEADROOM_MIN_GB`; the host: :data:`HOST_SHARE` of its available memory); else, ``device`` being a GPU,
    :data:`HOST` when they fit the host; else None (they fit nowhere)."""
    if need > limit_bytes:
        return None
    free_host = HOST_SHARE * free_bytes(HOST)
    if device == HOST:
        return HOST if need <= free_host else None
    free = free_bytes(device)
    if need <= free - max(GPU_HEADROOM * free, GPU_HEADROOM_MIN_GB * 2**30):
        return device
    return HOST if need <= free_host else None


def frame_bytes(rows: int, features: dict[str, Any], image_keys: list[str]) -> int:
    """Bytes the uint8 frames of ``image_keys`` take for ``rows`` rows, each key's shape from ``features`` (LeRobot's
    feature form): what a :class:`DecodedDataset` holds, e.g. of a ``LeRobotDataset`` (its selected rows,
    ``len(dataset)``, and ``dataset.meta.features``) or of rendered units."""
    return sum(rows * int(np.prod(features[key]["shape"])) for key in image_keys)


def _decode_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of the first video stream of ``path``: (F, H, W, 3) uint8 RGB and (F,) presentation times s."""
    import av

    frames: list[np.ndarray] = []
    times: list[float] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            frames.append(frame.to_ndarray(format="rgb24"))
            times.append(float(frame.time if frame.time is not None else len(times) / float(stream.average_rate)))
    if not frames:
        raise PolicyError(f"{path}: no video frames")
    return np.stack(frames), np.asarray(times)


def _decode_rows(meta: Any, key: str, episode: Any, frame_index: Any, starts: Any, ends: Any) -> np.ndarray:
    """The frame of camera ``key`` for every parquet row, (N, H, W, 3) uint8: each video file decoded once, the
    files in parallel threads (PyAV decodes outside the GIL; the files' rows are disjoint)."""
    h, w, _ = meta.features[key]["shape"]
    fps = float(meta.fps)
    out = np.empty((len(episode), h, w, 3), dtype=np.uint8)
    by_file: dict[Path, list[tuple[int, int, int]]] = {}
    for s, e in zip(starts, ends, strict=True):
        ep = int(episode[s])
        by_file.setdefault(Path(meta.root) / meta.get_video_file_path(ep, key), []).append((int(s), int(e), ep))

    def fill(path: Path, rows: list[tuple[int, int, int]]) -> None:
        frames, times = _decode_file(path)
        for s, e, ep in rows:
            wanted = float(meta.episodes[ep][f"videos/{key}/from_timestamp"]) + frame_index[s:e] / fps
            nearest = np.clip(np.searchsorted(times, wanted - 0.5 / fps), 0, len(times) - 1)
            if np.any(np.abs(times[nearest] - wanted) > 0.5 / fps) or frames.shape[1:3] != (h, w):
                raise PolicyError(f"{path}: episode {ep} has no frame for every row of {key}")
            out[s:e] = frames[nearest]

    with ThreadPoolExecutor(max_workers=max(1, min(len(by_file), os.cpu_count() or 1))) as pool:
        for task in [pool.submit(fill, path, rows) for path, rows in by_file.items()]:
            task.result()
    return out


class DecodedDataset:
    """Rows with their frames as uint8 (N, 3, H, W) views, on ``device`` or (``host_frames``) on the host; action
    chunks of ``chunk`` steps. :meth:`decode` reads a ``LeRobotDataset`` (PolicyError when a video lacks a frame for
    a parquet row)."""

    def __init__(
        self, state: np.ndarray, action: np.ndarray, episode: np.ndarray, images: dict[str, Any], chunk: int,
        device: str, extras: dict[str, np.ndarray] | None = None, host_frames: bool = False,
    ) -> None:  # fmt: skip
        """From rows in episode order: ``state``/``action`` (N, 6) float32, ``episode`` (N,) int (each episode's
        rows contiguous), ``images`` {key: (N, H, W, 3) uint8}, numpy arrays or tensors (kept when already where
        they are held: on ``device``, or on the host with ``host_frames``); ``extras`` {key: (N, ...) float32}: more
        per-row values (e.g. :data:`AUX_POSE` labels), batched as rows. ``host_frames``: the frames stay in host
        memory and batches gather theirs there (training on a GPU that cannot hold them)."""
        import torch

        n = len(state)
        # exclusive end row of each row's episode (rows of one episode are contiguous in a v3.0 dataset)
        change = np.flatnonzero(np.diff(episode)) + 1
        ends = np.append(change, n)
        starts = np.insert(change, 0, 0)
        self.episode_end = np.repeat(ends, ends - starts)
        self.length = n
        self.chunk = chunk
        self.device = device
        self.host_frames = host_frames
        home = HOST if host_frames else device
        self.images = {k: torch.as_tensor(v, device=home).permute(0, 3, 1, 2) for k, v in images.items()}  # uint8
        self.state = torch.from_numpy(np.asarray(state, dtype=np.float32)).to(device)
        self.action = torch.from_numpy(np.asarray(action, dtype=np.float32)).to(device)
        self.extras = {
            k: torch.from_numpy(np.asarray(v, dtype=np.float32)).to(device) for k, v in (extras or {}).items()
        }
        for key, values in self.extras.items():
            if values.shape[0] != n:
                raise PolicyError(f"extra {key!r} has {values.shape[0]} rows, the dataset {n}")
        self._end = torch.from_numpy(self.episode_end).to(device)
        self._offsets = torch.arange(chunk, device=device)

    @classmethod
    def decode(
        cls, dataset: Any, image_keys: list[str], chunk: int, device: str, host_frames: bool = False
    ) -> DecodedDataset:
        """Every row of ``dataset`` (a ``LeRobotDataset``; of its selected episodes only, LeRobot's ``episodes=``,
        which filters ``hf_dataset``) with its frames of ``image_keys``, decoded (kept on the host with
        ``host_frames``)."""
        meta = dataset.meta
        rows = dataset.hf_dataset.with_format("numpy")
        episode = np.asarray(rows["episode_index"], dtype=np.int64)
        frame_index = np.asarray(rows["frame_index"], dtype=np.int64)
        change = np.flatnonzero(np.diff(episode)) + 1
        starts, ends = np.insert(change, 0, 0), np.append(change, len(episode))
        images = {key: _decode_rows(meta, key, episode, frame_index, starts, ends) for key in image_keys}
        state, action = np.asarray(rows[OBS_STATE], np.float32), np.asarray(rows[ACTION], np.float32)
        return cls(state, action, episode, images, chunk, device, host_frames=host_frames)

    def __len__(self) -> int:
        return self.length

    def batch(self, index: Any) -> dict[str, Any]:
        """Items ``index`` ((B,) int64): state (B, 6), action (B, chunk, 6), action_is_pad (B, chunk) bool,
        each image key (B, 3, H, W) float32 in [0, 1], each extra key (B, ...) float32 (the items' rows); all on
        ``device``."""
        import torch

        images = self._host_images(index) if self.host_frames else None
        index = torch.as_tensor(index).to(self.device, non_blocking=True)
        steps = index[:, None] + self._offsets[None, :]
        last = self._end[index][:, None] - 1
        out: dict[str, Any] = {
            OBS_STATE: self.state[index],
            ACTION: self.action[torch.minimum(steps, last)],
            "action_is_pad": steps > last,
        }
        for key, frames in self.images.items():
            out[key] = (frames[index] if images is None else images[key]).float().div_(255.0)
        for key, values in self.extras.items():
            out[key] = values[index]
        return out

    def _host_images(self, index: Any) -> dict[str, Any]:
        """Each camera's frames of items ``index``, gathered in host memory (pinned when ``device`` is a GPU) and
        copied to ``device`` without waiting: {key: (B, 3, H, W) uint8}."""
        import torch

        index = torch.as_tensor(index).to(HOST)
        pin = self.device.startswith("cuda")
        out = {}
        for key, frames in self.images.items():
            rows = frames.permute(0, 2, 3, 1)  # the contiguous (N, H, W, 3) tensor: whole rows are copied
            staged = torch.empty((len(index), *rows.shape[1:]), dtype=torch.uint8, pin_memory=pin)
            torch.index_select(rows, 0, index, out=staged)
            out[key] = staged.to(self.device, non_blocking=True).permute(0, 3, 1, 2)
        return out

    def batches(self, batch_size: int, seed: int, start: int = 0) -> Iterator[dict[str, Any]]:
        """Endless batches of ``batch_size`` items: epoch ``e`` visits every item once in the order of
        ``torch.randperm`` seeded with ``seed + e`` on the device (on the CPU: the DataLoader source's order);
        the stream starts ``start`` items in. Frames on the device: indices never leave it (no host sync, no copy
        per batch). Frames on the host: each epoch's order is copied there once, and the next batch is gathered in
        a thread while the caller trains on this one."""
        order = self._order(batch_size, seed, start)
        if not self.host_frames:
            yield from map(self.batch, order)
            return
        with ThreadPoolExecutor(max_workers=1) as pool:
            ahead = pool.submit(self.batch, next(order))
            while True:
                current, ahead = ahead, pool.submit(self.batch, next(order))
                yield current.result()

    def _order(self, batch_size: int, seed: int, start: int) -> Iterator[Any]:
        """Endless (B,) int64 index tensors (:meth:`batches`' order), on the device, or on the host with
        ``host_frames``."""
        import torch

        home = HOST if self.host_frames else self.device
        gen = torch.Generator(device=self.device)
        epoch, skip = divmod(start, self.length)
        pending = torch.empty(0, dtype=torch.int64, device=home)
        while True:
            while pending.shape[0] < batch_size:
                gen.manual_seed(seed + epoch)
                perm = torch.randperm(self.length, generator=gen, device=self.device)
                pending = torch.cat([pending, perm[skip:].to(home)])
                skip = 0
                epoch += 1
            yield pending[:batch_size]
            pending = pending[batch_size:]
