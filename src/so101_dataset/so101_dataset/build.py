"""``so101 dataset build``: render → LeRobot v3.0 + v2.1 → bags → report, each stage resumable.

Layout of ``out_dir``: ``episodes/`` (rendered units, :mod:`.episodes`), ``lerobot_v3/``, ``lerobot_v21/``,
``bags/``, ``report/``. A rerun after a crash (SIGKILL included) skips complete units and bags and rebuilds
the merged datasets from the units, which are swapped in atomically: the result holds exactly the requested
episodes that rendered successfully, once each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from so101_core.atomic import write_json

from .config import DatasetConfig
from .episodes import render_episodes, selected_units
from .errors import DatasetError

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class BuildResult:
    """Where everything went and how much of it there is."""

    out_dir: Path
    v3_dir: Path
    v21_dir: Path
    bags_dir: Path | None
    report_dir: Path | None
    episodes: int
    frames: int
    failed: dict[str, Any] = field(default_factory=dict)
    times_s: dict[str, float] = field(default_factory=dict)


def export(
    out_dir: Path,
    cfg: DatasetConfig,
    indices: list[int] | None = None,
    progress: Progress | None = None,
    *,
    workers: int = 1,
) -> tuple[Path, Path, int, int]:
    """Merge the units into ``lerobot_v3/`` (:func:`.v3_merge.merge_shards`) and write ``lerobot_v21/``."""
    from .lerobot_v21 import write_v21
    from .mix import unit_provenance, write_provenance
    from .v3_merge import merge_shards

    units = selected_units(out_dir, indices)
    if progress:
        progress("export", 0, 2)
    v3 = merge_shards([u / "lerobot" for u in units], out_dir / "lerobot_v3", cfg, workers=workers)
    prov = [unit_provenance(u) for u in units]
    write_provenance(v3, prov)
    if progress:
        progress("export", 1, 2)
    v21 = write_v21(units, out_dir / "lerobot_v21", cfg)
    write_provenance(v21, prov)
    if progress:
        progress("export", 2, 2)
    import json

    info = json.loads((v3 / "meta" / "info.json").read_text())
    return v3, v21, int(info["total_episodes"]), int(info["total_frames"])


def build_dataset(
    demos_dir: Path,
    out_dir: Path,
    config: DatasetConfig,
    *,
    workers: int = 1,
    progress: Progress | None = None,
    max_episodes: int | None = None,
    address: str = "",
) -> BuildResult:
    """Render every kept demo under ``demos_dir`` and export all datasets into ``out_dir`` (resumable); rendering
    on Ray actors when ``address`` is given ("local" or a cluster address)."""
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    summary = render_episodes(
        demos_dir, out_dir, config, workers=workers, max_episodes=max_episodes, progress=progress, address=address
    )
    times["render_s"] = time.perf_counter() - t0
    if not summary["units"]:
        raise DatasetError(f"{demos_dir}: no demo rendered successfully ({len(summary['failed'])} failed)")
    indices = [int(u.name.split("_")[1]) for u in summary["units"]]
    t1 = time.perf_counter()
    v3, v21, episodes, frames = export(out_dir, config, indices, progress, workers=workers)
    times["export_s"] = time.perf_counter() - t1
    bags_dir = None
    if config.bags_enabled:
        from .bags import write_bags

        t2 = time.perf_counter()
        bags_dir = out_dir / "bags"
        write_bags(summary["units"], bags_dir, config, progress, workers=workers)
        times["bags_s"] = time.perf_counter() - t2
    report_dir = None
    if config.report_enabled:
        from .report import write_report

        t3 = time.perf_counter()
        report_dir = write_report(out_dir, demos_dir=demos_dir, indices=indices)
        times["report_s"] = time.perf_counter() - t3
        if progress:
            progress("report", 1, 1)
    times["total_s"] = time.perf_counter() - t0
    result = BuildResult(
        out_dir=out_dir,
        v3_dir=v3,
        v21_dir=v21,
        bags_dir=bags_dir,
        report_dir=report_dir,
        episodes=episodes,
        frames=frames,
        failed=summary["failed"],
        times_s=times,
    )
    write_json(
        out_dir / "build.json",
        {
            "episodes": episodes,
            "frames": frames,
            "requested": summary["requested"],
            "failed": summary["failed"],
            "times_s": {k: round(v, 3) for k, v in times.items()},
            "v3_dir": str(v3),
            "v21_dir": str(v21),
        },
    )
    return result
