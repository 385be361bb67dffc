"""Sim benchmark: physics real-time factor, CPU three-camera rendering rate, scripted success rate."""

from __future__ import annotations

import os
import time
from typing import Any

from .config import SimConfig, TaskConfig, load_task_config
from .randomization import DRConfig
from .rollout import run_scripted_episode
from .scripted_expert import ScriptedExpert
from .twin import Twin


def run_sim_benchmark(
    episodes: int = 50,
    *,
    render_frames: int = 20,
    width: int = 640,
    height: int = 480,
    first_seed: int = 0,
    sim: SimConfig | None = None,
    dr: DRConfig | None = None,
    task: TaskConfig | None = None,
) -> dict[str, Any]:
    """Measure the twin on this machine (one core: MuJoCo steps single-threaded).

    Returns a JSON-ready dict: ``physics_rtf`` (sim seconds per wall second while the scripted expert
    runs the randomized task, stepping only; ``physics_rtf_cpu`` per CPU second, ``physics_standing_vials`` in
    that scene), ``render_fps`` (frames/s, three cameras at
    ``width``×``height``), ``render_sets_per_s``, ``success_rate`` (our detector) and
    ``workshop_success_rate`` over ``episodes`` seeds, failures, per target slot (episodes, successes),
    (the caller records the machine: ``benchmarks.results.write_result``).
    """
    task = task or load_task_config()
    twin = Twin(sim, dr, task)
    try:
        expert = ScriptedExpert.for_twin(twin)
        wall_step = cpu_step = 0.0
        sim_time = 0.0
        failed: list[int] = []
        workshop_failed: list[int] = []
        by_target: dict[str, list[int]] = {}  # target slot -> [episodes, successes]
        t_eps = time.perf_counter()
        for seed in range(first_seed, first_seed + episodes):
            rec = run_scripted_episode(twin, seed, expert=expert, task=task)
            tally = by_target.setdefault(str(rec.target_slot), [0, 0])
            tally[0] += 1
            tally[1] += int(rec.success)
            if not rec.success:
                failed.append(seed)
            if not rec.workshop:
                workshop_failed.append(seed)
        t_eps = time.perf_counter() - t_eps

        # Physics RTF: time the physics alone over one scripted episode's action sequence, replayed.
        rec = run_scripted_episode(twin, first_seed, expert=expert, task=task, record=True)
        twin.reset(first_seed)
        t0, c0 = time.perf_counter(), time.process_time()
        for action in rec.actions:
            twin.step(action)
        wall_step, cpu_step = time.perf_counter() - t0, time.process_time() - c0
        sim_time = twin.time
        standing = len(twin.episode.prefilled) if twin.episode is not None else 0

        cams = [c.name for c in twin.config.cameras]
        for cam in cams:  # warm-up: context creation and texture upload
            twin.render(cam, width=width, height=height)
        t0 = time.perf_counter()
        for _ in range(render_frames):
            for cam in cams:
                twin.render(cam, width=width, height=height)
        wall_render = time.perf_counter() - t0
    finally:
        twin.close()
    return {
        "episodes": episodes,
        "success_rate": (episodes - len(failed)) / episodes if episodes else 0.0,
        "failed_seeds": failed,
        "workshop_success_rate": (episodes - len(workshop_failed)) / episodes if episodes else 0.0,
        "workshop_failed_seeds": workshop_failed,
        "by_target_slot": {k: {"episodes": v[0], "successes": v[1]} for k, v in sorted(by_target.items())},
        "episodes_wall_s": round(t_eps, 3),
        "physics_rtf": round(sim_time / wall_step, 2) if wall_step > 0 else None,
        "physics_rtf_cpu": round(sim_time / cpu_step, 2) if cpu_step > 0 else None,  # CPU time: a shared host
        "physics_standing_vials": standing,
        "physics_sim_s": round(sim_time, 3),
        "render_fps": round(render_frames * len(cams) / wall_render, 2),
        "render_sets_per_s": round(render_frames / wall_render, 2),
        "render_resolution": [width, height],
        "cameras": cams,
        "mujoco_gl": os.environ.get("MUJOCO_GL", ""),
    }
