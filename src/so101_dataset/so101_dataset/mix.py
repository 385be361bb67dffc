"""``so101 dataset mix``: a co-training dataset of simulated and real episodes at a frame ratio.

Method: **physical merge** (:mod:`.v3_merge`: lerobot's aggregation, in one pass) of whole episodes, chosen so
that sim frames ÷ all frames ≈ ``ratio`` (to the nearest episode). Why not weighted sampling: stock
``lerobot-train`` (ACT) and GR00T's fine-tune read one dataset and sample its frames uniformly, with no sampler
hook on their command lines; a merged dataset makes the ratio hold for every consumer, and it is inspectable.
Real episodes are scarce, so all of them are kept once; the sim side is a seeded random subset of the sim
episodes, or, when there are too few, a repetition of them (each repeat a separate episode index, ``repeat`` in
its provenance).

Inputs: ``sim`` = a ``so101 dataset build`` output directory (its one-episode units are the merge sources,
so no video is re-encoded); ``real`` = any LeRobot v3.0 dataset root (e.g. from ``lerobot-record``) with the
same features, fps and robot_type. Output: a v3.0 dataset plus ``meta/so101_provenance.jsonl`` (per episode:
source seed / generated / real, origin, seed ids, DR draw, repeat) and ``meta/so101_mix.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.episode_units import EPISODE_FILE

from .config import DatasetConfig
from .episodes import selected_units
from .errors import ExportError
from .lerobot_v3 import replace_dir

PROVENANCE = "so101_provenance.jsonl"


def unit_provenance(unit: Path) -> dict[str, Any]:
    """Provenance record of a rendered unit (source, origin, seed ids, DR draw)."""
    meta = json.loads((unit / EPISODE_FILE).read_text())
    p = meta["provenance"]
    return {
        "source": p["source"],
        "origin": f"{unit.name}:{meta['demo_file']}",
        "seed_ids": p.get("seed_ids", []),
        "scene_seed": p.get("scene_seed"),
        "attempt": p.get("attempt"),
        "dr": meta.get("visual_dr"),
        "frames": meta["frames"],
    }


def write_provenance(dataset: Path, rows: list[dict[str, Any]]) -> None:
    path = dataset / "meta" / PROVENANCE
    path.write_text("".join(json.dumps({"episode_index": i, **r}) + "\n" for i, r in enumerate(rows)), encoding="utf-8")


def mix_datasets(
    sim: Path, real: Path, ratio: float, out: Path, cfg: DatasetConfig, *, seed: int = 0
) -> dict[str, Any]:
    """Merge ``sim`` (build dir) and ``real`` (v3.0 root) into ``out`` at sim frame share ``ratio`` (0 < r < 1)."""
    from lerobot.datasets import LeRobotDatasetMetadata

    from .v3_merge import merge_shards

    if not 0.0 < ratio < 1.0:
        raise ExportError(f"--ratio must be strictly between 0 and 1 (sim share of frames), got {ratio}")
    if not (real / "meta" / "info.json").is_file():
        raise ExportError(f"{real}: not a LeRobot v3.0 dataset (no meta/info.json)")
    units = selected_units(sim)
    sim_frames = [json.loads((u / EPISODE_FILE).read_text())["frames"] for u in units]
    real_meta = LeRobotDatasetMetadata(cfg.repo_id, root=real)
    sim_info = json.loads((units[0] / "lerobot" / "meta" / "info.json").read_text())
    for key, value in (("fps", real_meta.fps), ("robot_type", real_meta.robot_type)):
        if sim_info[key] != value:
            raise ExportError(f"{real}: {key} {value!r} differs from the sim dataset's {sim_info[key]!r}")
    real_frames = int(real_meta.total_frames)
    real_prov_path = real / "meta" / PROVENANCE
    real_prov = (
        [json.loads(line) for line in real_prov_path.read_text().splitlines() if line.strip()]
        if real_prov_path.is_file()
        else []
    )
    rng = np.random.default_rng(seed)
    order = [int(i) for i in rng.permutation(len(units))]
    want = ratio / (1.0 - ratio) * real_frames  # sim frames that make sim ÷ all = ratio
    chosen: list[int] = []
    acc = 0
    while acc < want and (acc + sim_frames[order[len(chosen) % len(order)]] / 2) <= want + 1e-9:
        i = order[len(chosen) % len(order)]
        chosen.append(i)
        acc += sim_frames[i]
    if not chosen:
        chosen = [order[0]]
    roots = [units[i] / "lerobot" for i in chosen] + [real]
    tmp = merge_shards(roots, out.with_name(out.name + ".tmp"), cfg)
    rows = [{**unit_provenance(units[i]), "repeat": chosen[:k].count(i)} for k, i in enumerate(chosen)]
    for e in range(int(real_meta.total_episodes)):
        base = real_prov[e] if e < len(real_prov) else {}
        rows.append(
            {**{k: v for k, v in base.items() if k != "episode_index"}, "source": "real", "origin": f"{real}:{e}"}
        )
    write_provenance(tmp, rows)
    sim_out = sum(sim_frames[i] for i in chosen)
    real_out = real_frames
    summary = {
        "method": "physical merge (so101_dataset.v3_merge, lerobot's aggregation in one pass) of whole episodes",
        "ratio_requested": ratio,
        "sim_frame_share": round(sim_out / (sim_out + real_out), 4),
        "sim_episodes": len(chosen),
        "sim_episodes_available": len(units),
        "real_episodes": int(real_meta.total_episodes),
        "sim_repeated": len(chosen) > len(set(chosen)),
        "frames": sim_out + real_out,
        "seed": seed,
        "sim": str(sim),
        "real": str(real),
    }
    (tmp / "meta" / "so101_mix.json").write_text(json.dumps(summary, indent=1))
    replace_dir(tmp, out)
    return summary
