"""LeRobot v2.1 + GR00T N1.6 ``meta/modality.json``, written directly from the rendered units.

lerobot ≥ 0.4 writes only v3.0 and ships no v3.0 → v2.1 converter (NVIDIA's needs lerobot 0.4), so this
module writes the v2.1 layout itself (lerobot 0.3.3's and GR00T's demo ``cube_to_bowl_5``)::

    meta/info.json  meta/episodes.jsonl  meta/tasks.jsonl  meta/episodes_stats.jsonl  meta/stats.json
    meta/modality.json  data/chunk-000/episode_000000.parquet
    videos/chunk-000/observation.images.<cam>/episode_000000.mp4
    gr00t/so101_modality_config.py  gr00t/FINETUNE.md

The MP4s are the one-episode shards' own files (hard-linked when possible, else copied): the same bytes
as the v3.0 dataset, one per episode and camera, with exactly as many frames as the parquet has rows.
``stats.json`` holds mean/std/min/max/q01/q10/q50/q90/q99 and count for every float feature (GR00T reads it).
The GR00T names (joint groups, language key, modality config) come from :mod:`so101_core.lerobot_schema`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from so101_core.episode_units import EPISODE_FILE
from so101_core.lerobot_schema import (
    ACTION,
    ACTION_REPRESENTATION,
    ANNOTATION_GROUP,
    JOINT_GROUPS,
    LANGUAGE_KEY,
    OBS_STATE,
    TASK_COLUMN,
    image_key,
    modality_configs,
)

from .config import DatasetConfig
from .errors import ExportError
from .lerobot_v3 import replace_dir

CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)


def modality_json(cameras: Sequence[str]) -> dict[str, Any]:
    """GR00T ``meta/modality.json``: joint groups of state and action, cameras, the task text's annotation group
    (keyed without ``annotation.``: GR00T's loader prefixes it, giving :data:`LANGUAGE_KEY`)."""
    return {
        "state": {k: {"start": a, "end": b} for k, (a, b) in JOINT_GROUPS.items()},
        "action": {k: {"start": a, "end": b} for k, (a, b) in JOINT_GROUPS.items()},
        "video": {c: {"original_key": image_key(c)} for c in cameras},
        "annotation": {ANNOTATION_GROUP: {"original_key": TASK_COLUMN}},
    }


def _stats(x: np.ndarray, quantiles: bool) -> dict[str, Any]:
    """min/max/mean/std/count over axis 0 of (N, D); with quantiles also q01..q99.

    GR00T N1.6 reads six of these keys by name (mean/std/min/max/q01/q99: ``gr00t/data/stats.py``
    ``check_stats_validity``; ``sharded_mixture_dataset.py`` ``merge_statistics`` builds its per-group stats from
    exactly those six). Its loader slices every key per joint group (``get_dataset_statistics``), count/q10/q50/q90
    included, and ``merge_statistics`` then drops them: the extra keys (lerobot's own set) are harmless.
    """
    x = x.astype(np.float64)
    out: dict[str, Any] = {
        "min": x.min(0).tolist(),
        "max": x.max(0).tolist(),
        "mean": x.mean(0).tolist(),
        "std": x.std(0).tolist(),
        "count": [len(x)],
    }
    if quantiles:
        for q in QUANTILES:
            out[f"q{round(q * 100):02d}"] = np.quantile(x, q, axis=0).tolist()
    return out


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def _shard_frame(unit: Path) -> pd.DataFrame:
    files = sorted((unit / "lerobot" / "data").glob("chunk-*/file-*.parquet"))
    if len(files) != 1:
        raise ExportError(f"{unit}: expected one data file in the episode shard, found {len(files)}")
    return pd.read_parquet(files[0])


def _video_feature(info_feat: dict[str, Any], fps: int) -> dict[str, Any]:
    info = dict(info_feat.get("info") or {})
    return {
        "dtype": "video",
        "shape": list(info_feat["shape"]),
        "names": list(info_feat["names"]),
        "info": {
            "video.height": info.get("video.height", info_feat["shape"][0]),
            "video.width": info.get("video.width", info_feat["shape"][1]),
            "video.codec": info.get("video.codec"),
            "video.pix_fmt": info.get("video.pix_fmt"),
            "video.is_depth_map": bool(info.get("is_depth_map", False)),
            "video.fps": info.get("video.fps", fps),
            "video.channels": info.get("video.channels", 3),
            "has_audio": bool(info.get("has_audio", False)),
        },
    }


def write_v21(units: Sequence[Path], out: Path, cfg: DatasetConfig) -> Path:
    """Write the v2.1 dataset of ``units`` (in order; episode i = units[i]) to ``out``, replaced atomically."""
    if not units:
        raise ExportError("no rendered episodes to export")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "meta").mkdir(parents=True)
    shard_info = json.loads((units[0] / "lerobot" / "meta" / "info.json").read_text())
    tasks: dict[str, int] = {}
    episodes, ep_stats, states, actions, stamps = [], [], [], [], []
    index = 0
    for ep, unit in enumerate(units):
        meta = json.loads((unit / EPISODE_FILE).read_text())
        task = meta["task"]
        tix = tasks.setdefault(task, len(tasks))
        df = _shard_frame(unit)
        n = len(df)
        state = np.stack(df[OBS_STATE].to_numpy()).astype(np.float32)
        action = np.stack(df[ACTION].to_numpy()).astype(np.float32)
        ts = df["timestamp"].to_numpy().astype(np.float32)
        cols = {
            OBS_STATE: pa.array(list(state), type=pa.list_(pa.float32())),
            ACTION: pa.array(list(action), type=pa.list_(pa.float32())),
            "timestamp": pa.array(ts, type=pa.float32()),
            "frame_index": pa.array(np.arange(n), type=pa.int64()),
            "episode_index": pa.array(np.full(n, ep), type=pa.int64()),
            "index": pa.array(np.arange(index, index + n), type=pa.int64()),
            "task_index": pa.array(np.full(n, tix), type=pa.int64()),
        }
        path = tmp / DATA_PATH.format(episode_chunk=ep // CHUNKS_SIZE, episode_index=ep)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(cols), path)
        shard_stats = json.loads((unit / "lerobot" / "meta" / "stats.json").read_text())
        stats = {
            OBS_STATE: _stats(state, False),
            ACTION: _stats(action, False),
            "timestamp": _stats(ts[:, None], False),
            "frame_index": _stats(np.arange(n)[:, None], False),
            "episode_index": _stats(np.full((n, 1), ep), False),
            "index": _stats(np.arange(index, index + n)[:, None], False),
            "task_index": _stats(np.full((n, 1), tix), False),
        }
        for cam in cfg.cameras:
            key = image_key(cam)
            src = sorted((unit / "lerobot" / "videos" / key).glob("chunk-*/file-*.mp4"))
            if len(src) != 1:
                raise ExportError(f"{unit}: expected one video for {cam}, found {len(src)}")
            _link(src[0], tmp / VIDEO_PATH.format(episode_chunk=ep // CHUNKS_SIZE, video_key=key, episode_index=ep))
            s = shard_stats.get(key)
            if s:
                stats[key] = {k: s[k] for k in ("min", "max", "mean", "std", "count") if k in s}
        episodes.append({"episode_index": ep, "tasks": [task], "length": n})
        ep_stats.append({"episode_index": ep, "stats": stats})
        states.append(state)
        actions.append(action)
        stamps.append(ts)
        index += n
    feats: dict[str, Any] = {}
    for key, feat in shard_info["features"].items():
        if feat["dtype"] == "video":
            feats[key] = _video_feature(feat, cfg.fps)
        else:
            feats[key] = {"dtype": feat["dtype"], "shape": list(feat["shape"]), "names": feat.get("names")}
    n_ep = len(units)
    info = {
        "codebase_version": "v2.1",
        "robot_type": cfg.robot_type,
        "total_episodes": n_ep,
        "total_frames": index,
        "total_tasks": len(tasks),
        "total_videos": n_ep * len(cfg.cameras),
        "total_chunks": math.ceil(n_ep / CHUNKS_SIZE),
        "chunks_size": CHUNKS_SIZE,
        "fps": cfg.fps,
        "splits": {"train": f"0:{n_ep}"},
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH,
        "features": feats,
    }
    m = tmp / "meta"
    (m / "info.json").write_text(json.dumps(info, indent=4))
    _jsonl(m / "episodes.jsonl", episodes)
    _jsonl(m / "tasks.jsonl", [{"task_index": i, "task": t} for t, i in tasks.items()])
    _jsonl(m / "episodes_stats.jsonl", ep_stats)
    stats_all = {
        OBS_STATE: _stats(np.concatenate(states), True),
        ACTION: _stats(np.concatenate(actions), True),
        "timestamp": _stats(np.concatenate(stamps)[:, None], True),
    }
    (m / "stats.json").write_text(json.dumps(stats_all, indent=4))
    (m / "modality.json").write_text(json.dumps(modality_json(cfg.cameras), indent=4))
    write_gr00t_files(tmp / "gr00t", cfg.cameras)
    replace_dir(tmp, out)
    return out


def _jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


GR00T_CONFIG = '''"""GR00T N1.6 modality config for so101 datasets (``so101 dataset export`` writes it; not run here).

Use with Isaac-GR00T (Python 3.10) as ``--modality_config_path`` of ``gr00t/experiment/launch_finetune.py``.
State/action keys and the video keys match this dataset's ``meta/modality.json``.
"""

from gr00t.configs.data.embodiment_configs import register_modality_config
from gr00t.data.embodiment_tags import EmbodimentTag
from gr00t.data.types import ActionConfig, ActionFormat, ActionRepresentation, ActionType, ModalityConfig

so101_config = {
    "video": ModalityConfig(delta_indices=__VIDEO_STEPS__, modality_keys=__VIDEO_KEYS__),
    "state": ModalityConfig(delta_indices=__STATE_STEPS__, modality_keys=__STATE_KEYS__),
    "action": ModalityConfig(
        delta_indices=__ACTION_STEPS__,
        modality_keys=__ACTION_KEYS__,
        action_configs=[
__ACTION_CONFIGS__
        ],
    ),
    "language": ModalityConfig(delta_indices=__LANGUAGE_STEPS__, modality_keys=__LANGUAGE_KEYS__),
}

register_modality_config(so101_config, embodiment_tag=EmbodimentTag.NEW_EMBODIMENT)
'''

FINETUNE_MD = """# Fine-tuning GR00T N1.6 on this dataset (documented, not runnable here)

This directory is a LeRobot **v2.1** dataset with `meta/modality.json`, the layout Isaac-GR00T N1.6 loads.
GR00T needs Python 3.10 and its own environment (torch 2.7.1, numpy 1.26), a CUDA GPU and the
`nvidia/GR00T-N1.6-3B` weights; none of that exists in so101's environment, so the command below was
never run by so101. From an Isaac-GR00T checkout (`uv sync --python 3.10`):

```bash
python gr00t/experiment/launch_finetune.py \\
  --base_model_path nvidia/GR00T-N1.6-3B \\
  --dataset_path DATASET_DIR \\
  --modality_config_path DATASET_DIR/gr00t/so101_modality_config.py \\
  --embodiment_tag NEW_EMBODIMENT \\
  --num_gpus 1 --output_dir OUTPUT_DIR --max_steps 10000 --global_batch_size 32
```

Embodiment tag `new_embodiment`, action horizon __HORIZON__, state/action `single_arm` (indices 0:5,
degrees) and `gripper` (5:6, 0..100), cameras __CAMERAS__, language key `__LANGUAGE__` (from `task_index`).
Serve the result with `python gr00t/eval/run_gr00t_server.py --model-path OUTPUT_DIR/checkpoint-N
--embodiment-tag NEW_EMBODIMENT --port 5555`; so101's policy node speaks that protocol.
"""


def _steps_py(steps: Sequence[int]) -> str:
    """Python source of a ``delta_indices`` list (``list(range(n))`` for 0..n-1)."""
    counting = len(steps) > 1 and list(steps) == list(range(len(steps)))
    return f"list(range({len(steps)}))" if counting else str(list(steps))


def gr00t_config_py(cameras: Sequence[str]) -> str:
    """Source of the N1.6 ``--modality_config_path`` file: :func:`so101_core.lerobot_schema.modality_configs`."""
    configs = modality_configs(cameras)
    subs = {}
    for modality, config in configs.items():
        subs[f"__{modality.upper()}_STEPS__"] = _steps_py(config.delta_indices)
        subs[f"__{modality.upper()}_KEYS__"] = json.dumps(list(config.modality_keys))
    subs["__ACTION_CONFIGS__"] = "\n".join(
        f"            ActionConfig(rep=ActionRepresentation.{ACTION_REPRESENTATION[key]}, type=ActionType.NON_EEF,"
        f" format=ActionFormat.DEFAULT),  # {key}"
        for key in configs["action"].modality_keys
    )
    text = GR00T_CONFIG
    for k, v in subs.items():
        text = text.replace(k, v)
    return text


def write_gr00t_files(directory: Path, cameras: Sequence[str]) -> None:
    """The N1.6 modality-config file and the fine-tune instructions."""
    directory.mkdir(parents=True, exist_ok=True)
    horizon = len(modality_configs(cameras)["action"].delta_indices)
    guide = FINETUNE_MD
    subs = {"__CAMERAS__": json.dumps(list(cameras)), "__HORIZON__": str(horizon), "__LANGUAGE__": LANGUAGE_KEY}
    for k, v in subs.items():
        guide = guide.replace(k, v)
    (directory / "so101_modality_config.py").write_text(gr00t_config_py(cameras), encoding="utf-8")
    (directory / "FINETUNE.md").write_text(guide, encoding="utf-8")


def check_gr00t_layout(root: Path) -> dict[str, Any]:
    """Check ``root`` against GR00T N1.6's loader rules (``lerobot_episode_loader.py``); raises ExportError.

    Files present; every episode's parquet at ``data_path``, every video at ``video_path`` for each
    modality video's ``original_key``; decoded frames == parquet rows; state/action slices cover the
    6 dims exactly once; the language key :data:`LANGUAGE_KEY`, less its ``annotation.`` prefix, names an
    annotation group whose column maps through tasks.jsonl. Returns counts checked.
    """
    from .lerobot_v3 import count_video_frames

    m = root / "meta"
    for name in ("info.json", "episodes.jsonl", "tasks.jsonl", "modality.json", "stats.json"):
        if not (m / name).is_file():
            raise ExportError(f"{root}: missing meta/{name}")
    info = json.loads((m / "info.json").read_text())
    modality = json.loads((m / "modality.json").read_text())
    eps = [json.loads(line) for line in (m / "episodes.jsonl").read_text().splitlines() if line.strip()]
    tasks = {json.loads(line)["task_index"] for line in (m / "tasks.jsonl").read_text().splitlines() if line.strip()}
    for part in ("state", "action"):
        key = OBS_STATE if part == "state" else ACTION
        dim = info["features"][key]["shape"][0]
        covered = sorted(i for v in modality[part].values() for i in range(v["start"], v["end"]))
        if covered != list(range(dim)):
            raise ExportError(f"{root}: modality.{part} covers {covered}, not 0..{dim - 1} once each")
    for v in modality["video"].values():
        if v["original_key"] not in info["features"]:
            raise ExportError(f"{root}: modality video {v['original_key']} is not a feature")
    annotations = modality.get("annotation") or {}
    if ANNOTATION_GROUP not in annotations:
        raise ExportError(
            f"{root}: modality.annotation has {sorted(annotations)}, not {ANNOTATION_GROUP!r}: GR00T prefixes "
            f"'annotation.' itself to find the language key {LANGUAGE_KEY!r}"
        )
    task_column = annotations[ANNOTATION_GROUP].get("original_key", LANGUAGE_KEY)
    frames = 0
    for ep in eps:
        i = ep["episode_index"]
        chunk = i // info["chunks_size"]
        table = pq.read_table(root / info["data_path"].format(episode_chunk=chunk, episode_index=i))
        rows = table.num_rows
        if rows != ep["length"]:
            raise ExportError(f"{root}: episode {i} has {rows} rows, episodes.jsonl says {ep['length']}")
        if task_column not in table.column_names:
            raise ExportError(f"{root}: episode {i} has no column {task_column!r} (the task annotation)")
        if not set(table.column(task_column).to_pylist()) <= tasks:
            raise ExportError(f"{root}: episode {i} has a {task_column} missing from tasks.jsonl")
        for v in modality["video"].values():
            path = root / info["video_path"].format(episode_chunk=chunk, video_key=v["original_key"], episode_index=i)
            n = count_video_frames(path)
            if n != rows:
                raise ExportError(f"{path}: {n} frames, the parquet has {rows} rows")
        frames += rows
    return {"episodes": len(eps), "frames": frames, "videos": len(eps) * len(modality["video"])}
