#!/usr/bin/env python3
"""From five scripted seeds to a success rate in the twin, in one command (the policy issue's first figure).

Stages (each timed, the whole under ``--budget-s``): scripted seeds (so101_skillgen.seeds_from_sim) →
SkillGen (``--gen-workers`` processes, disjoint attempt seeds) → render a LeRobot v3.0 dataset (so101_dataset)
→ ACT training (so101_policy.train, ``--train-s`` time limit) → evaluation in the twin through the real graph
(so101_policy.evaluate, stops starting episodes at the budget) → ``so101 bench policy`` figures. Writes
``summary.json`` and copies the small results (summary, bench JSON, report, first plot and video) to
``--results``. On a CPU use tiny sizes (``--width 64 --height 48 --demos 4 --train-s 30 --episodes 1``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _generate_part(args: tuple[str, str, int, int]) -> dict:
    seeds_dir, out_dir, num, random_seed = args
    from so101_skillgen.config import load_skillgen_config
    from so101_skillgen.generation import generate

    cfg = dataclasses.replace(load_skillgen_config(), random_seed=random_seed)
    summary = generate(seeds_dir, out_dir, cfg, num_demos=num)
    return {"kept": summary.kept, "attempted": summary.attempted, "failures": summary.failures_by_reason}


def _fallback_render(demos_dir: Path, out: Path, width: int, height: int, max_demos: int) -> Path:
    """Insurance if the dataset stage fails: replay kept demos in the twin (no physics) into a v3.0 dataset with
    the same features, one process. Only used when so101_dataset's build raises (the summary says so)."""
    import numpy as np
    from lerobot.datasets import LeRobotDataset
    from so101_core.lerobot_units import LEROBOT_JOINT_NAMES, to_lerobot
    from so101_core.seeds.format import load_seed
    from so101_core.sim.twin import Twin

    names = list(LEROBOT_JOINT_NAMES)
    feats: dict = {k: {"dtype": "float32", "shape": (6,), "names": names} for k in ("observation.state", "action")}
    for c in ("ego", "side", "top"):
        feats[f"observation.images.{c}"] = {"dtype": "video", "shape": (height, width, 3),
                                            "names": ["height", "width", "channels"]}  # fmt: skip
    root = out / "fallback_v3"
    if root.exists():
        shutil.rmtree(root)
    ds = LeRobotDataset.create("local/so101_sim", 30, feats, root=root, robot_type="so_follower")
    with Twin() as twin:
        for path in sorted(demos_dir.glob("**/demo_*.npz"))[:max_demos]:
            demo = load_seed(path)
            twin.reset(demo.seed)
            state, action = to_lerobot(demo.joint_positions), to_lerobot(demo.actions)
            for k in range(len(demo.t)):
                for name, poses in demo.object_poses.items():
                    twin.set_object_pose(name, (poses[k, :3], poses[k, 3:]))
                twin.set_joint_positions(demo.joint_positions[k])
                frame = {"observation.state": state[k].astype(np.float32), "action": action[k].astype(np.float32),
                         "task": "put the vial in the rack"}  # fmt: skip
                for c in ("ego", "side", "top"):
                    frame[f"observation.images.{c}"] = twin.render(c, width=width, height=height)
                ds.add_frame(frame)
            ds.save_episode()
    ds.finalize()
    return root


def _copy_results(a: argparse.Namespace) -> None:
    """Copy the small result files (summary, bench JSON, eval results, report, first plot and video) to --results."""
    if a.results is None:
        return
    a.results.mkdir(parents=True, exist_ok=True)
    files = [a.out / "summary.json", a.out / f"policy_{a.label}.json", a.out / "eval" / "results.json",
             a.out / "eval" / "report.html", a.out / "eval" / "episodes.jsonl", a.out / "eval" / "tracking_000.png",
             a.out / "eval" / "episode_000.mp4", a.out / "train" / "metrics.jsonl"]  # fmt: skip
    for f in files:
        if f.is_file() and f.stat().st_size < 15 * 2**20:
            shutil.copy(f, a.results / f.name)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--results", type=Path, default=None, help="folder for the small result files")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--demos", type=int, default=100)
    p.add_argument("--gen-workers", type=int, default=8)
    p.add_argument("--render-workers", type=int, default=8)
    p.add_argument("--width", type=int, default=160)
    p.add_argument("--height", type=int, default=120)
    p.add_argument("--train-s", type=float, default=150.0)
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-workers", type=int, default=12)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--rtf", type=float, default=2.0, help="eval real-time factor")
    p.add_argument("--budget-s", type=float, default=480.0)
    p.add_argument("--bench-calls", type=int, default=200)
    p.add_argument("--bench-width", type=int, default=640)
    p.add_argument("--bench-height", type=int, default=480)
    p.add_argument("--label", default="h200")
    p.add_argument("--amp", action="store_true", help="train under bf16 autocast")
    p.add_argument(
        "--until",
        choices=("render", "all"),
        default="all",
        help="render: stop once the dataset is built (a later call with the same --out trains on it)",
    )
    a = p.parse_args()
    t_start = time.monotonic()
    a.out.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    summary: dict = {"args": {k: str(v) for k, v in vars(a).items()}}

    def stage(name: str, t0: float) -> None:
        times[name] = round(time.monotonic() - t0, 2)
        print(f"== {name}: {times[name]:.1f} s (total {time.monotonic() - t_start:.1f} s)", flush=True)
        summary["times_s"] = times
        (a.out / "summary.json").write_text(json.dumps(summary, indent=2))

    built_marker = a.out / "dataset_built.json"
    if built_marker.is_file():  # an earlier call built the dataset: train and evaluate on it
        prior = json.loads(built_marker.read_text())
        summary.update({**prior["summary"], "args": summary["args"], "build_args": prior["summary"]["args"]})
        times.update(prior["times_s"])
        v3_dir, kept = Path(prior["v3_dir"]), int(prior["kept"])
    else:
        v3_dir, kept = _build(a, summary, stage)
        built_marker.write_text(json.dumps({"summary": summary, "times_s": times, "v3_dir": str(v3_dir),
                                            "kept": kept}))  # fmt: skip
    if a.until == "render":
        print(json.dumps(summary, indent=2))
        return 0
    return _train_eval(a, summary, stage, times, t_start, v3_dir, kept)


def _build(a: argparse.Namespace, summary: dict, stage: Any) -> tuple[Path, int]:
    """Stages 1–3: scripted seeds, SkillGen, the v3.0 dataset. Returns (dataset dir, kept demos)."""
    # 1. scripted seeds
    t0 = time.monotonic()
    from so101_core.seeds.format import save_seed
    from so101_core.sim.twin import Twin
    from so101_skillgen.seeds_from_sim import scripted_seeds

    seeds_dir = a.out / "seeds"
    seeds_dir.mkdir(exist_ok=True)
    with Twin() as twin:
        demos = scripted_seeds(twin, list(range(a.seeds * 3)))[: a.seeds]
    for i, d in enumerate(demos):
        save_seed(d, seeds_dir / f"seed_{i:03d}.npz")
    summary["seeds"] = len(demos)
    stage("seeds", t0)

    # 2. SkillGen, in parallel parts with disjoint random seeds
    t0 = time.monotonic()
    workers = max(1, min(a.gen_workers, a.demos))
    per = [a.demos // workers + (1 if i < a.demos % workers else 0) for i in range(workers)]
    jobs = [(str(seeds_dir), str(a.out / "skillgen" / f"part_{i:02d}"), n, 1000 + i) for i, n in enumerate(per) if n]
    with mp.get_context("spawn").Pool(len(jobs)) as pool:
        parts = pool.map(_generate_part, jobs)
    kept = sum(x["kept"] for x in parts)
    attempted = sum(x["attempted"] for x in parts)
    summary["skillgen"] = {"kept": kept, "attempted": attempted, "yield": kept / max(attempted, 1)}
    stage("skillgen", t0)

    # 3. render the LeRobot v3.0 dataset
    t0 = time.monotonic()
    from so101_dataset.build import build_dataset
    from so101_dataset.config import load_dataset_config

    dcfg = load_dataset_config()
    dcfg = dataclasses.replace(
        dcfg, width=a.width, height=a.height, workers=a.render_workers, bags_enabled=False, report_enabled=False
    )
    try:
        built = build_dataset(a.out / "skillgen", a.out / "dataset", dcfg, workers=a.render_workers)
        v3_dir = built.v3_dir
        summary["dataset"] = {"episodes": built.episodes, "frames": built.frames, "failed": len(built.failed)}
    except Exception as exc:  # insurance: the one device run must still train and evaluate
        print(f"so101_dataset build failed ({type(exc).__name__}: {exc}); fallback renderer", flush=True)
        v3_dir = _fallback_render(a.out / "skillgen", a.out, a.width, a.height, max_demos=30)
        summary["dataset"] = {"fallback_renderer": True, "error": f"{type(exc).__name__}: {exc}"}
    stage("render", t0)
    return v3_dir, kept


def _train_eval(
    a: argparse.Namespace, summary: dict, stage: Any, times: dict, t_start: float, v3_dir: Path, kept: int
) -> int:
    """Stages 4–6: ACT training, evaluation in the twin, the benchmark figures."""

    # 4. ACT training
    t0 = time.monotonic()
    from so101_policy.config import load_train_config
    from so101_policy.train import train_policy

    tcfg = dataclasses.replace(
        load_train_config(),
        steps=a.steps,
        batch_size=a.batch_size,
        num_workers=a.num_workers,
        lr=a.lr,
        lr_backbone=a.lr,
        time_limit_s=a.train_s,
        use_amp=a.amp,
        save_freq=10**9,
        log_freq=100,
    )
    last = {"t": time.monotonic()}

    def on_progress(pr) -> None:
        if time.monotonic() - last["t"] > 15:
            last["t"] = time.monotonic()
            print(f"   step {pr.step} loss {pr.loss:.4f} {pr.samples_per_s:.0f} samples/s", flush=True)

    result = train_policy(v3_dir, a.out / "train", tcfg, progress=on_progress)
    train_json = a.out / "train" / "train_result.json"
    train_json.write_text(
        json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(result).items()})
    )
    summary["train"] = {"steps": result.steps, "final_loss": result.final_loss, "samples_per_s": result.samples_per_s}
    stage("train", t0)

    # 5. evaluation in the twin
    t0 = time.monotonic()
    from so101_policy.config import load_eval_config
    from so101_policy.evaluate import checkpoint_spec, run_evaluation

    ecfg = dataclasses.replace(load_eval_config(), episodes=a.episodes, real_time_factor=a.rtf, videos=1, device="auto")
    deadline = t_start + a.budget_s - 45.0  # leave time for the benchmark
    ev = run_evaluation(
        checkpoint_spec(result.checkpoint_dir, "auto"),
        a.out / "eval",
        ecfg,
        progress=lambda i, n, row: print(f"   episode {i}/{n}: success={row['success']}", flush=True),
        deadline=deadline,
    )
    summary["eval"] = {
        "episodes": ev.episodes,
        "successes": ev.successes,
        "success_rate": ev.success_rate,
        "wilson_95": [ev.wilson_low, ev.wilson_high],
        "workshop_rate": ev.workshop_rate,
    }
    stage("eval", t0)
    _copy_results(a)  # the evaluation comes back even if the benchmark runs out of time

    # 6. benchmark figures
    t0 = time.monotonic()
    from so101_policy.bench_policy import run_policy_benchmark

    bench = run_policy_benchmark(
        result.checkpoint_dir,
        "auto",
        calls=a.bench_calls,
        width=a.bench_width,
        height=a.bench_height,
        jitter_s=8.0,
        train_result=train_json,
        eval_results=a.out / "eval" / "results.json",
        demos=kept,
        full_resolution=True,
    )
    bench["pipeline"] = {**summary, "wall_s": round(time.monotonic() - t_start, 1)}
    bench["command"] = "python3 scripts/policy_first_success.py " + " ".join(sys.argv[1:])
    os.environ["SO101_BENCH_RESULTS"] = str(a.out)
    from so101_cli.benchmarks.results import write_result

    write_result(f"policy_{a.label}", bench)
    stage("bench", t0)
    summary["wall_s"] = round(time.monotonic() - t_start, 1)
    (a.out / "summary.json").write_text(json.dumps(summary, indent=2))
    _copy_results(a)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
