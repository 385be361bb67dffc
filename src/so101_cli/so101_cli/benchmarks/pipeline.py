"""``so101 bench pipeline``: the whole pipeline from an empty output directory (cold), then once more (every
stage skipped), with the wall time per stage; the main job's goal is < 10 minutes on a 2-core CPU machine,
the H200 profile's < 25 minutes with >= 90 % sim success."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

GOALS = {
    "pipeline.yaml": {"wall_s_max": 600.0},
    "pipeline_h200.yaml": {"wall_s_max": 1500.0, "success_rate_min": 0.9},
}


def run_pipeline_benchmark(
    config: Path | None, out: Path, *, keep: bool = False, sets: Sequence[str] = ()
) -> dict[str, Any]:
    """Run ``config`` (with ``sets`` over it, as ``so101 pipeline run --set``) into ``out`` (emptied first unless
    ``keep``: then whatever is there is resumed or skipped, e.g. a pipeline finished in slices) and a second time;
    returns the cold summary's figures plus the re-run's wall time. The stage times are those of the invocations
    that produced each output (all their slices)."""
    from so101_pipeline.config import load_pipeline_config
    from so101_pipeline.pipeline import RunOptions, run_pipeline
    from so101_pipeline.progress import RichReporter

    cfg = load_pipeline_config(config, sets)

    if out.exists() and not keep:
        shutil.rmtree(out)
    earlier = out / "summary.json"
    slices = json.loads(earlier.read_text())["slices"] if keep and earlier.is_file() else 1
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    with RichReporter() as reporter:
        cold = run_pipeline(cfg, RunOptions(out=str(out)), reporter=reporter)
    cold_wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    warm = run_pipeline(cfg, RunOptions(out=str(out)))
    name = Path(cold["config"]).name
    return {
        "config": name,
        "overrides": cold["overrides"],
        "wall_s": round(cold["pipeline_wall_s"] if keep else cold_wall, 1),
        "pipeline_wall_s": cold["pipeline_wall_s"],
        "slices": slices,
        "stages_wall_s": {k: v["produced_wall_s"] for k, v in cold["stages"].items()},
        "stages_resumed": [k for k, v in cold["stages"].items() if v["resumed"] or v["skipped"]],
        "rerun_wall_s": round(time.perf_counter() - t1, 2),
        "rerun_all_skipped": all(v["skipped"] for v in warm["stages"].values()),
        "seeds": cold["seeds"],
        "demos": cold["demos"],
        "attempts": cold["attempts"],
        "yield": cold["yield"],
        "frames": cold["frames"],
        "train_steps": cold["train_steps"],
        "final_loss": cold["final_loss"],
        "dataset_times_s": cold["dataset_times_s"],  # the dataset stage's render, export, bags, report (last slice's)
        "train_samples_per_s": cold["train_samples_per_s"],
        "success_rate": cold["success_rate"],
        "successes": cold["successes"],
        "episodes": cold["episodes"],
        "wilson_low": cold["wilson_low"],
        "wilson_high": cold["wilson_high"],
        "workshop_success_rate": cold.get("workshop_success_rate"),
        "workshop_wilson": cold.get("workshop_wilson"),
        "load_avg_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "goals": GOALS.get(name, {}),
        "note": "wall_s: one `so101 pipeline run` from an empty output directory, Python start-up excluded"
        if not keep
        else "wall_s: the stages' produced_wall_s added up (every slice of the run that made each output)",
    }
