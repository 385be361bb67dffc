"""LeRobot v3.0 through the ``lerobot`` library itself: one-episode shards.

Each rendered episode is its own v3.0 dataset (``LeRobotDataset.create`` → ``add_frame`` per frame →
``save_episode`` → ``finalize``), written by one worker under a temporary name and renamed when complete:
a crash never leaves a half episode, and workers never share a file. :mod:`.v3_merge` joins the complete
shards into one dataset.

Frames are streamed to lerobot's encoder threads (``streaming_encoding=True``: no PNG round trip); with
``video.image_stats: exact`` (default) those threads count pixel levels for the image statistics instead of
lerobot's per-frame running histograms (:mod:`.stream_encoder`). lerobot's queue drops a frame when full;
:class:`ShardWriter` waits for room before each frame instead, and checks the encoded frame count against the
episode length, so a dataset never holds a frame-short video. Its ``save_episode`` skips lerobot's per-row
``embed_images`` map where no feature has anything to embed (:func:`embedding_only_where_needed`).

Features (shapes, LeRobot units): ``observation.state`` (6,) float32 and ``action`` (6,) float32 named
:data:`LEROBOT_JOINT_NAMES` (arm degrees, gripper 0..100); ``observation.images.<cam>`` video (H, W, 3).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from so101_core.lerobot_schema import ACTION, OBS_STATE, image_key
from so101_core.lerobot_units import LEROBOT_JOINT_NAMES

from .config import DatasetConfig, VideoConfig
from .errors import ExportError

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def features(cfg: DatasetConfig) -> dict[str, dict[str, Any]]:
    """The feature dict (as lerobot-record builds it for the SO-101 follower with these cameras)."""
    names = list(LEROBOT_JOINT_NAMES)
    feats: dict[str, dict[str, Any]] = {
        OBS_STATE: {"dtype": "float32", "shape": (6,), "names": names},
        ACTION: {"dtype": "float32", "shape": (6,), "names": names},
    }
    for cam in cfg.cameras:
        feats[image_key(cam)] = {
            "dtype": "video",
            "shape": (cfg.height, cfg.width, 3),
            "names": ["height", "width", "channels"],
            "info": {"is_depth_map": False},
        }
    return feats


def rgb_encoder(video: VideoConfig) -> Any:
    """lerobot ``RGBEncoderConfig`` of ``video``."""
    from lerobot.configs import RGBEncoderConfig

    return RGBEncoderConfig(vcodec=video.vcodec, pix_fmt=video.pix_fmt, g=video.g, crf=video.crf, preset=video.preset)


def dataset_class(image_stats: str) -> Any:
    """The writer class for ``video.image_stats``: stock ``LeRobotDataset`` (``lerobot``) or
    :class:`~so101_dataset.stream_encoder.CountingLeRobotDataset` (``exact``)."""
    if image_stats == "lerobot":
        from lerobot.datasets import LeRobotDataset

        return LeRobotDataset
    if image_stats == "exact":
        from .stream_encoder import CountingLeRobotDataset

        return CountingLeRobotDataset
    raise ExportError(f"video.image_stats must be one of exact, lerobot; got {image_stats!r}")


class ShardWriter:
    """Writes one episode as a complete v3.0 dataset at ``root`` (which must not exist)."""

    def __init__(self, root: Path, cfg: DatasetConfig) -> None:
        quiet_av()
        self.root = root
        self.cfg = cfg
        self.ds = dataset_class(cfg.video.image_stats).create(
            repo_id=cfg.repo_id,
            fps=cfg.fps,
            features=features(cfg),
            root=root,
            robot_type=cfg.robot_type,
            use_videos=True,
            rgb_encoder=rgb_encoder(cfg.video),
            streaming_encoding=True,
            encoder_queue_maxsize=cfg.video.queue_frames,
            encoder_threads=cfg.video.encoder_threads or None,
            video_backend="pyav",  # the shard is never decoded; lerobot's default probes torchcodec and logs a
            # warning (a traceback where it is installed but unloadable) for every shard
        )
        self.frames = 0
        self.wait_s = 0.0  # time spent waiting for the encoder queues (encode-bound share)

    def _queues(self) -> list[Any]:
        enc = getattr(self.ds.writer, "_streaming_encoder", None)
        return list(getattr(enc, "_frame_queues", {}).values()) if enc is not None else []

    def add(
        self, images: dict[str, npt.NDArray[np.uint8]], state: npt.ArrayLike, action: npt.ArrayLike, task: str
    ) -> None:
        """One frame: ``images`` camera → (H, W, 3) uint8, ``state``/``action`` (6,) LeRobot units."""
        if self.frames:
            t0 = time.perf_counter()
            while any(q.full() for q in self._queues()):
                time.sleep(0.0005)
            self.wait_s += time.perf_counter() - t0
        frame: dict[str, Any] = {
            OBS_STATE: np.asarray(state, dtype=np.float32),
            ACTION: np.asarray(action, dtype=np.float32),
            "task": task,
        }
        for cam in self.cfg.cameras:
            frame[image_key(cam)] = images[cam]
        self.ds.add_frame(frame)
        self.frames += 1

    def finish(self) -> int:
        """Encode, write and finalize; returns the frame count (raises if an encoded video is short)."""
        with embedding_only_where_needed():
            self.ds.save_episode()
        self.ds.finalize()
        enc = getattr(self.ds.writer, "_streaming_encoder", None)
        dropped = dict(getattr(enc, "_dropped_frames", {}) or {}) if enc is not None else {}
        if any(dropped.values()):
            raise ExportError(f"{self.root}: the encoder dropped frames {dropped}")
        check_video_frames(self.root, self.cfg.cameras, self.frames)
        return self.frames

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # best effort: the directory is removed anyway
            self.ds.clear_episode_buffer()
        shutil.rmtree(self.root, ignore_errors=True)


def count_video_frames(path: Path, *, decode: bool = True) -> int:
    """Frame count of an MP4: decoded frames, or (``decode=False``) non-empty video packets (no decoding)."""
    import av

    c = av.open(str(path))
    try:
        if decode:
            return sum(1 for _ in c.decode(video=0))
        return sum(1 for p in c.demux(video=0) if p.size)
    finally:
        c.close()


def check_video_frames(root: Path, cameras: Sequence[str], expected: int) -> None:
    """Every camera's (single) MP4 of a one-episode shard holds ``expected`` frames."""
    for cam in cameras:
        files = sorted((root / "videos" / image_key(cam)).glob("chunk-*/file-*.mp4"))
        if len(files) != 1:
            raise ExportError(f"{root}: expected one video for {cam}, found {len(files)}")
        n = count_video_frames(files[0], decode=False)
        if n != expected:
            raise ExportError(f"{files[0]}: {n} frames, the episode has {expected}")


def replace_dir(new: Path, final: Path) -> None:
    """Swap ``new`` in as ``final`` (an older ``final`` is moved aside first, then removed)."""
    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(new, final)
    shutil.rmtree(old, ignore_errors=True)


def load(root: Path, repo_id: str = "local/so101_sim") -> Any:
    """Stock ``LeRobotDataset`` over ``root`` (offline)."""
    from lerobot.datasets import LeRobotDataset

    return LeRobotDataset(repo_id, root=root)


@contextlib.contextmanager
def embedding_only_where_needed() -> Iterator[None]:
    """Within it, lerobot's episode writer runs its ``embed_images`` only for an episode with a feature whose bytes
    go into the parquet (``datasets``' ``require_storage_embed``: images stored as such). It maps ``datasets``'
    ``embed_table_storage`` over the episode one row at a time and returns the table unchanged when no feature
    needs it, as in a video dataset (numbers and strings): ~0.3 s of a 280-frame episode, a third of its
    ``save_episode``. Restored on leaving (the writer's module attribute; one thread writes a shard)."""
    from datasets.features.features import require_storage_embed
    from lerobot.datasets import dataset_writer

    stock = dataset_writer.embed_images

    def embed_images(dataset: Any) -> Any:
        if any(require_storage_embed(feature) for feature in dataset.features.values()):
            return stock(dataset)
        return dataset

    dataset_writer.embed_images = embed_images
    try:
        yield
    finally:
        dataset_writer.embed_images = stock


def quiet_av() -> None:
    """Keep FFmpeg's per-stream encoder statistics (INFO) out of the log."""
    import av

    av.logging.set_level(av.logging.ERROR)
