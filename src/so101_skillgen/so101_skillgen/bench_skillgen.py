"""SkillGen benchmark: yield and kept demos per minute per core on this machine (no rendering).

Seeds come from the scripted expert (scene seeds 10_000 + i, successful and not partly done); the run
generates into a temporary directory with ``config/skillgen.yaml`` (``num_demos`` overridden).
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from so101_core.seeds.format import SeedDemo
from so101_core.sim.config import SimConfig
from so101_core.sim.randomization import DRConfig
from so101_core.sim.twin import Twin

from .config import SkillGenConfig, load_skillgen_config
from .errors import SkillGenError
from .generation import Generator
from .seeds_from_sim import scripted_seeds


def run_skillgen_benchmark(
    num_seeds: int = 5,
    num_demos: int = 20,
    *,
    cfg: SkillGenConfig | None = None,
    sim: SimConfig | None = None,
    dr: DRConfig | None = None,
) -> dict[str, Any]:
    """Generate ``num_demos`` from ``num_seeds`` scripted seeds; returns a JSON-ready dict.

    ``yield`` = kept ÷ attempted; ``kept_per_min_per_core`` = kept demos per CPU-minute of this process
    (one generation worker uses one core: MuJoCo and the IK are single-threaded); ``kept_per_min_wall``
    for reference. ``setup_s`` covers FK replay, segmentation and the reachability check.
    """
    cfg = cfg or load_skillgen_config()
    twin = Twin(sim, dr)
    demos: list[SeedDemo] = []
    start = 10_000
    while len(demos) < num_seeds and start < 10_000 + 10 * num_seeds + 10:
        demos += scripted_seeds(twin, [start])
        start += 1
    if len(demos) < num_seeds:
        raise SkillGenError(f"the scripted expert produced only {len(demos)} of {num_seeds} seeds")
    t0, c0 = time.perf_counter(), time.process_time()
    gen = Generator(demos, cfg, sim=sim, dr=dr)
    setup = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="so101_skillgen_bench_") as tmp:
        t1, c1 = time.perf_counter(), time.process_time()
        summary = gen.run(tmp, num_demos)
        wall, cpu = time.perf_counter() - t1, time.process_time() - c1
    steps = sum(len(d.t) for d in demos) / len(demos)
    return {
        "num_seeds": num_seeds,
        "num_demos": num_demos,
        "kept": summary.kept,
        "attempted": summary.attempted,
        "yield": round(summary.yield_, 4),
        "failures_by_reason": summary.failures_by_reason,
        "kept_per_min_per_core": round(60.0 * summary.kept / cpu, 2) if cpu > 0 else None,
        "kept_per_min_wall": round(60.0 * summary.kept / wall, 2) if wall > 0 else None,
        "generation_wall_s": round(wall, 3),
        "generation_cpu_s": round(cpu, 3),
        "setup_s": round(setup, 3),
        "setup_cpu_s": round(time.process_time() - c0 - cpu, 3),
        "mean_seed_steps": round(steps, 1),
        "ik_backend": cfg.ik.backend,
        "cpu_count": os.cpu_count(),
        "goals": {"yield_min": 0.6, "kept_per_min_per_core_min": 30.0, "baseline_yield": 0.22},
    }
