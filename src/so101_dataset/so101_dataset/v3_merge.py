"""Join complete v3.0 shards into one v3.0 dataset in one pass (linear in the shards), with lerobot's own pieces.

lerobot's ``aggregate_datasets`` adds one source at a time: it loads every source's metadata through
``datasets`` (≈ 0.5 s a shard on the 2-core VM, 1.2 s on the H200 machine) and rewrites the growing
destination video and parquet files for each source, so its cost grows with the square of the shard count
(600 one-episode shards: minutes). :func:`merge_shards` makes the same dataset in one pass: it reads each
shard's small files with pandas and PyAV, plans every destination file first (the same rotation rule:
a new file when the current one and the source reach lerobot's size limit), then writes each destination
once — videos with lerobot's ``concatenate_video_files`` (stream copy, no re-encoding), parquet with its
``to_parquet_one_row_group_per_episode``, info, tasks and stats with its writers and ``aggregate_stats``.
The episode rows are re-indexed as ``aggregate_datasets`` re-indexes them (episode, frame and task indices,
file indices, video timestamps offset by the durations before them in their file, shifted index stats);
tests hold the two outputs equal.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from .config import DatasetConfig
from .errors import ExportError
from .lerobot_v3 import quiet_av, replace_dir

ChunkFile = tuple[int, int]
_SHIFTED_STATS = ("min", "max", "mean", "q01", "q10", "q50", "q90", "q99")
_QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}


@dataclass
class _Shard:
    """One source dataset's files but its videos, read once (in a reading thread); the plan re-indexes ``data``
    in place."""

    root: Path
    info: Any  # lerobot DatasetInfo
    tasks: pd.DataFrame
    stats: dict[str, dict[str, np.ndarray]] | None
    episodes: list[pd.DataFrame]  # its meta/episodes files, in (chunk, file) order
    episodes_mb: list[float]
    video_files: dict[str, list[ChunkFile]]
    data: dict[ChunkFile, pd.DataFrame] = field(default_factory=dict)  # its data files' frames, in (chunk, file) order
    data_mb: dict[ChunkFile, float] = field(default_factory=dict)
    video_mb: dict[tuple[str, ChunkFile], float] = field(default_factory=dict)
    video_s: dict[tuple[str, ChunkFile], float] = field(default_factory=dict)


def _pairs(df: pd.DataFrame, prefix: str) -> list[ChunkFile]:
    """The distinct (chunk, file) pairs that ``df``'s rows name under ``prefix`` (data, videos/<key>)."""
    pairs = zip(df[f"{prefix}/chunk_index"], df[f"{prefix}/file_index"], strict=True)
    return sorted({(int(c), int(f)) for c, f in pairs})


def _read_shard(root: Path) -> _Shard:
    """The v3.0 dataset at ``root`` but its videos' frames: metadata and data tables, sizes (MB) of its data and
    videos, the videos' durations (s) (:class:`ExportError` naming the shard when a file is missing or unreadable)."""
    try:
        return _read_shard_files(root)
    except ExportError:
        raise
    except Exception as exc:
        raise ExportError(f"{root}: not a complete v3.0 dataset ({type(exc).__name__}: {exc})") from exc


def _read_shard_files(root: Path) -> _Shard:
    from lerobot.datasets.io_utils import (
        get_file_size_in_mb,
        get_parquet_file_size_in_mb,
        load_info,
        load_stats,
        load_tasks,
    )
    from lerobot.datasets.utils import DEFAULT_DATA_PATH, DEFAULT_VIDEO_PATH, EPISODES_DIR
    from lerobot.datasets.video_utils import get_video_duration_in_s

    info = load_info(root)
    episode_files = sorted((root / EPISODES_DIR).glob("chunk-*/file-*.parquet"))
    episodes = [pd.read_parquet(p) for p in episode_files]
    if not episodes:
        raise ExportError(f"{root}: no episode metadata (meta/episodes/)")
    everything = pd.concat(episodes, ignore_index=True)
    video_keys = [k for k, f in info.features.items() if f["dtype"] == "video"]
    shard = _Shard(
        root=root,
        info=info,
        tasks=load_tasks(root),
        stats=load_stats(root),
        episodes=episodes,
        episodes_mb=[get_parquet_file_size_in_mb(p) for p in episode_files],
        video_files={k: _pairs(everything, f"videos/{k}") for k in video_keys},
    )
    for c, f in _pairs(everything, "data"):
        path = root / DEFAULT_DATA_PATH.format(chunk_index=c, file_index=f)
        shard.data[(c, f)] = pd.read_parquet(path)
        shard.data_mb[(c, f)] = get_parquet_file_size_in_mb(path)
    for key, files in shard.video_files.items():
        for c, f in files:
            path = root / DEFAULT_VIDEO_PATH.format(video_key=key, chunk_index=c, file_index=f)
            shard.video_mb[(key, (c, f))] = get_file_size_in_mb(path)
            shard.video_s[(key, (c, f))] = get_video_duration_in_s(path)
    return shard


class _FilePlan:
    """Destination files filled in order: a new file when the current one plus the source reaches ``max_mb``
    (``aggregate_datasets``'s rule, with the current file's size as the sum of its sources')."""

    def __init__(self, max_mb: float, chunk_size: int) -> None:
        self.max_mb, self.chunk_size = max_mb, chunk_size
        self.files: dict[ChunkFile, list[Any]] = {}
        self.current: ChunkFile = (0, 0)
        self.size_mb = 0.0
        self.duration_s = 0.0

    def add(self, item: Any, size_mb: float, duration_s: float = 0.0) -> tuple[ChunkFile, float]:
        """Place ``item``; returns its destination (chunk, file) and the duration before it in that file."""
        from lerobot.datasets.utils import update_chunk_file_indices

        if self.current in self.files and self.size_mb + size_mb >= self.max_mb:
            self.current = update_chunk_file_indices(*self.current, self.chunk_size)
            self.size_mb = self.duration_s = 0.0
        offset = self.duration_s
        self.files.setdefault(self.current, []).append(item)
        self.size_mb += size_mb
        self.duration_s += duration_s
        return self.current, offset


def _check(shards: Sequence[_Shard]) -> None:
    from lerobot.datasets.feature_utils import features_equal_for_merge

    first = shards[0].info
    for s in shards[1:]:
        if s.info.fps != first.fps or s.info.robot_type != first.robot_type:
            raise ExportError(
                f"{s.root}: fps/robot_type {s.info.fps}/{s.info.robot_type}, first shard's "
                f"{first.fps}/{first.robot_type}"
            )
        if not features_equal_for_merge(first.features, s.info.features):
            raise ExportError(f"{s.root}: its features differ from the first shard's ({shards[0].root})")


def _concat_videos(sources: list[Path], out: Path) -> None:
    """One destination video: a copy of a single source, else lerobot's stream-copy concatenation."""
    quiet_av()
    out.parent.mkdir(parents=True, exist_ok=True)
    if len(sources) == 1:
        shutil.copy(sources[0], out)
    else:
        from lerobot.datasets.video_utils import concatenate_video_files

        concatenate_video_files(sources, out)


def _reindex_episodes(df: pd.DataFrame, tasks: pd.DataFrame, episodes_before: int, frames_before: int) -> pd.DataFrame:
    """Episode rows' episode and frame indices and their stats moved past the earlier shards', task stats
    relabelled with the merged task table (file indices and timestamps are set by the caller)."""
    df["dataset_from_index"] += frames_before
    df["dataset_to_index"] += frames_before
    df["episode_index"] += episodes_before
    for name, offset in (("episode_index", episodes_before), ("index", frames_before)):
        for stat in _SHIFTED_STATS:
            if f"stats/{name}/{stat}" in df.columns:
                df[f"stats/{name}/{stat}"] = df[f"stats/{name}/{stat}"] + offset
    if any(c.startswith("stats/task_index/") for c in df.columns):
        ids = [np.array([tasks.loc[t, "task_index"] for t in row], dtype=np.float64) for row in df["tasks"]]
        for stat in ("min", "max", "mean", "std", *_QUANTILES):
            col = f"stats/task_index/{stat}"
            if col in df.columns:
                df[col] = [np.full_like(orig, _task_stat(i, stat)) for orig, i in zip(df[col], ids, strict=True)]
    return df


def _task_stat(ids: np.ndarray, stat: str) -> float:
    if stat in _QUANTILES:
        return float(np.quantile(ids, _QUANTILES[stat]))
    if stat == "min":
        return float(ids.min())
    if stat == "max":
        return float(ids.max())
    return float(ids.std() if stat == "std" else ids.mean())


def preload() -> float:
    """Import the lerobot modules the merge uses; returns the seconds it took (a process pays it once, whatever
    the shard count: 12 s cold on the H100 machine, against 39 ms a shard for the merge itself)."""
    t0 = time.perf_counter()
    import lerobot.datasets.aggregate
    import lerobot.datasets.video_utils  # noqa: F401

    return time.perf_counter() - t0


def merge_shards(
    shards: Sequence[Path],
    out: Path,
    cfg: DatasetConfig,
    *,
    workers: int = 1,
    data_files_mb: float | None = None,
    video_files_mb: float | None = None,
) -> Path:
    """Join the complete v3.0 datasets ``shards`` (in order) into one v3.0 dataset at ``out`` (replaced
    atomically). ``workers``: threads reading the shards' small files and writing the videos;
    ``data_files_mb``/``video_files_mb``: lerobot's file size limits (None: its defaults, 100 and 200 MB)."""
    from lerobot.datasets import LeRobotDatasetMetadata
    from lerobot.datasets.aggregate import merge_video_feature_info_for_aggregate
    from lerobot.datasets.compute_stats import aggregate_stats
    from lerobot.datasets.io_utils import write_info, write_stats, write_tasks
    from lerobot.datasets.utils import DEFAULT_CHUNK_SIZE, DEFAULT_DATA_FILE_SIZE_IN_MB, DEFAULT_VIDEO_FILE_SIZE_IN_MB

    if not shards:
        raise ExportError("no rendered episodes to export")
    data_mb = DEFAULT_DATA_FILE_SIZE_IN_MB if data_files_mb is None else data_files_mb
    video_mb = DEFAULT_VIDEO_FILE_SIZE_IN_MB if video_files_mb is None else video_files_mb
    workers = max(1, workers)
    with ThreadPoolExecutor(workers) as pool:
        read = list(pool.map(_read_shard, [Path(s) for s in shards]))
    _check(read)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    features = merge_video_feature_info_for_aggregate([SimpleNamespace(features=s.info.features) for s in read])
    video_keys = [k for k, f in features.items() if f["dtype"] == "video"]
    unique = pd.concat([s.tasks for s in read]).index.unique()
    tasks = pd.DataFrame({"task_index": range(len(unique))}, index=pd.Index(unique, name="task"))
    try:
        dst = LeRobotDatasetMetadata.create(
            repo_id=cfg.repo_id,
            fps=read[0].info.fps,
            robot_type=read[0].info.robot_type,
            features=features,
            root=tmp,
            use_videos=bool(video_keys),
            chunks_size=DEFAULT_CHUNK_SIZE,
            data_files_size_in_mb=data_mb,
            video_files_size_in_mb=video_mb,
        )
        plans = _plan(read, tasks, video_keys, data_mb, video_mb)
        _write(plans, tmp, workers)
        write_tasks(tasks, tmp)
        dst.info.total_tasks = len(tasks)
        dst.info.total_episodes = sum(s.info.total_episodes for s in read)
        dst.info.total_frames = sum(s.info.total_frames for s in read)
        dst.info.splits = {"train": f"0:{dst.info.total_episodes}"}
        write_info(dst.info, tmp)
        write_stats(aggregate_stats([s.stats for s in read if s.stats is not None]), tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    replace_dir(tmp, out)
    return out


@dataclass
class _Plans:
    """Every destination file and what goes into it, by lerobot's path template."""

    data: _FilePlan  # data frames (DataFrames, re-indexed)
    episodes: _FilePlan  # episode rows (DataFrames, re-indexed)
    videos: dict[str, _FilePlan]  # per video key: source MP4 paths


def _plan(
    read: Sequence[_Shard], tasks: pd.DataFrame, video_keys: list[str], data_mb: float, video_mb: float
) -> _Plans:
    """Place every shard's data, videos and episode rows in destination files, re-indexed past the shards
    before it (``aggregate_datasets``'s bookkeeping in one pass)."""
    from lerobot.datasets.utils import (
        DEFAULT_CHUNK_SIZE,
        DEFAULT_DATA_FILE_SIZE_IN_MB,
        DEFAULT_VIDEO_PATH,
    )

    plans = _Plans(
        data=_FilePlan(data_mb, DEFAULT_CHUNK_SIZE),
        episodes=_FilePlan(DEFAULT_DATA_FILE_SIZE_IN_MB, DEFAULT_CHUNK_SIZE),
        videos={k: _FilePlan(video_mb, DEFAULT_CHUNK_SIZE) for k in video_keys},
    )
    episodes_before = frames_before = 0
    for s in read:
        data_dst: dict[ChunkFile, ChunkFile] = {}
        for cf, df in s.data.items():
            df["episode_index"] += episodes_before
            df["index"] += frames_before
            names = s.tasks.index.take(df["task_index"].to_numpy())
            df["task_index"] = tasks.loc[names, "task_index"].to_numpy()
            data_dst[cf], _ = plans.data.add(df, s.data_mb[cf])
        video_dst = {
            key: {
                cf: plans.videos[key].add(
                    s.root / DEFAULT_VIDEO_PATH.format(video_key=key, chunk_index=cf[0], file_index=cf[1]),
                    s.video_mb[(key, cf)],
                    s.video_s[(key, cf)],
                )
                for cf in s.video_files[key]
            }
            for key in video_keys
        }
        for df, mb in zip(s.episodes, s.episodes_mb, strict=True):
            df = _reindex_episodes(df.copy(), tasks, episodes_before, frames_before)
            rows = list(zip(df["data/chunk_index"], df["data/file_index"], strict=True))
            df["data/chunk_index"] = [data_dst[(int(c), int(f))][0] for c, f in rows]
            df["data/file_index"] = [data_dst[(int(c), int(f))][1] for c, f in rows]
            for key in video_keys:
                rows = list(zip(df[f"videos/{key}/chunk_index"], df[f"videos/{key}/file_index"], strict=True))
                where = [video_dst[key][(int(c), int(f))] for c, f in rows]
                df[f"videos/{key}/chunk_index"] = [w[0][0] for w in where]
                df[f"videos/{key}/file_index"] = [w[0][1] for w in where]
                df[f"videos/{key}/from_timestamp"] += [w[1] for w in where]
                df[f"videos/{key}/to_timestamp"] += [w[1] for w in where]
            (mc, mf), _ = plans.episodes.add(df, mb)  # the plan holds df itself: its own file, set next
            df["meta/episodes/chunk_index"] = mc
            df["meta/episodes/file_index"] = mf
        episodes_before += s.info.total_episodes
        frames_before += s.info.total_frames
    return plans


def _write(plans: _Plans, root: Path, workers: int) -> None:
    """Each destination file once: parquet with lerobot's writers, videos concatenated on ``workers`` threads."""
    from lerobot.datasets.io_utils import to_parquet_one_row_group_per_episode
    from lerobot.datasets.utils import DEFAULT_DATA_PATH, DEFAULT_EPISODES_PATH, DEFAULT_VIDEO_PATH

    for (c, f), frames in plans.data.files.items():
        path = root / DEFAULT_DATA_PATH.format(chunk_index=c, file_index=f)
        path.parent.mkdir(parents=True, exist_ok=True)
        to_parquet_one_row_group_per_episode(pd.concat(frames, ignore_index=True), path)
    for (c, f), rows in plans.episodes.files.items():
        path = root / DEFAULT_EPISODES_PATH.format(chunk_index=c, file_index=f)
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.concat(rows, ignore_index=True).to_parquet(path)
    jobs = [
        (sources, root / DEFAULT_VIDEO_PATH.format(video_key=key, chunk_index=c, file_index=f))
        for key, plan in plans.videos.items()
        for (c, f), sources in plan.files.items()
    ]
    with ThreadPoolExecutor(workers) as pool:
        for fut in [pool.submit(_concat_videos, src, path) for src, path in jobs]:
            fut.result()
