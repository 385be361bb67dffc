"""``so101 train --sweep``: K training configurations side by side on one device, each scored by the fast evaluator.

A sweep file names the runs as overrides of the training config and, optionally, the evaluation that scores them::

    base: {batch_size: 512, use_amp: true}   # train.yaml fields every run changes (optional)
    runs:                      # name: train.yaml fields this run changes (over base)
      frozen: {backbone_norm: frozen}
      batch: {backbone_norm: batch}
    eval: {episodes: 50, dr_profile: wide}   # eval.yaml fields to change for the scoring (optional)
    at_once: 1                 # runs training at a time (optional; 0, the default: all of them)

Each run trains in its own process (``so101 train``, so a GPU is shared by K processes at once, and each
resumes by itself after a crash) into ``<out>/<name>/``; ``at_once`` bounds how many train together (each holds
its own frames, on the device where they fit beside training, else in host memory, slower), the next starting as
one ends. Once all have finished their steps, each final checkpoint is scored with
:func:`~.fast_eval.evaluate_checkpoint_fast` into ``<out>/<name>/fast_eval/``. ``<out>/sweep.json`` ranks the runs
by success rate (then the workshop rule's); every other run's ``paired_with_best`` pairs its episodes with the
best run's scene by scene (:func:`~.metrics.paired_comparison`: scenes only one solved, exact McNemar p). With
the runs' ``time_limit_s`` (a slice of a time-limited job) each run's own limit is what is left of the slice, and a
run that waited for a place starts only with :data:`RUN_RESERVE_S` left; when a run stopped at its limit or did
not start, or the slice has no time left to score the next run, ``sweep.json`` says ``complete: false``: the same
command goes on from there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from nodegraph.launch.process import ManagedProcess

from .config import EvalConfig, TrainConfig, parse_config
from .errors import ConfigError, PolicyError
from .metrics import paired_comparison


@dataclasses.dataclass(frozen=True)
class Sweep:
    """The runs (name → training config) and the scoring evaluation of one sweep file."""

    runs: dict[str, TrainConfig]
    eval: EvalConfig
    changes: dict[str, dict[str, Any]]  # name → the fields the run sets over the shared base
    at_once: int = 0  # runs training at a time (0: all)


def load_sweep(path: Path, base: TrainConfig, base_eval: EvalConfig) -> Sweep:
    """Parse a sweep file over ``base`` / ``base_eval``; errors name the run and the field."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError("sweep", str(exc), file=str(path)) from exc
    if not isinstance(data, dict) or set(data) - {"base", "runs", "eval", "at_once"}:
        got = sorted(data) if isinstance(data, dict) else data
        raise ConfigError("sweep", f"expected the keys runs (and base, eval, at_once), got {got!r}", file=str(path))
    at_once = data.get("at_once", 0)
    if not isinstance(at_once, int) or isinstance(at_once, bool) or at_once < 0:
        raise ConfigError("at_once", f"must be an integer >= 0 (0: all runs at once), got {at_once!r}", file=str(path))
    shared = data.get("base") or {}
    if not isinstance(shared, dict):
        raise ConfigError("base", "must be a mapping of train fields", file=str(path))
    runs_raw = data.get("runs")
    if not isinstance(runs_raw, dict) or not runs_raw:
        raise ConfigError("runs", "must name at least one run (name: {field: value})", file=str(path))
    runs: dict[str, TrainConfig] = {}
    changes: dict[str, dict[str, Any]] = {}
    for name, over in runs_raw.items():
        if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError("runs", f"run name {name!r} must be letters, digits, - or _", file=str(path))
        if not isinstance(over, dict):
            raise ConfigError(f"runs.{name}", "must be a mapping of train fields", file=str(path))
        runs[name] = parse_config(TrainConfig, {**_plain(base), **shared, **over}, f"sweep.runs.{name}")
        changes[name] = dict(over)
    evaluation = parse_config(EvalConfig, {**_plain(base_eval), **(data.get("eval") or {})}, "sweep.eval")
    return Sweep(runs, evaluation, changes, at_once)


def _plain(cfg: Any) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(cfg).items()}


SCORE_RESERVE_S = 180.0  # time kept for scoring one run before any scoring has been measured in this call
RUN_RESERVE_S = 120.0  # slice time a run needs to start: its cold start, some steps and its final checkpoint


def run_sweep(sweep: Sweep, dataset: Path, out_dir: Path, *, envs: int = 0) -> list[dict[str, Any]]:
    """Train every run at once, then score each; the rows of ``sweep.json``, best first.

    A run whose ``train_result.json`` already has its steps is not started again, and a scored run is not
    scored again; a run trained in an earlier call is scored before the others train on (a slice that ends while
    they train still leaves its score). With the runs' ``time_limit_s`` (the call's slice) a run is scored only
    while the slice has time for it (the longest scoring so far, or :data:`SCORE_RESERVE_S` before the first), and
    starts no episode after the slice's end (a scoring cut short counts as not done); otherwise ``sweep.json`` says
    ``complete: false`` and the same command goes on from there."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    limit = max(cfg.time_limit_s for cfg in sweep.runs.values())
    deadline = t0 + limit if limit > 0 else float("inf")
    longest = 0.0  # the longest scoring of this call, s

    def scored(name: str) -> bool:
        """``name``'s fast evaluation exists (now or from an earlier call); False when the slice has no time."""
        nonlocal longest
        run_dir = out_dir / name
        if (run_dir / "fast_eval" / "fast_results.json").is_file():
            return True
        if time.perf_counter() + (1.5 * longest or SCORE_RESERVE_S) > deadline:
            return False
        from .fast_eval import evaluate_checkpoint_fast

        t_score = time.perf_counter()
        until = time.monotonic() + (deadline - t_score) if deadline < float("inf") else None
        result = evaluate_checkpoint_fast(run_dir, run_dir / "fast_eval", sweep.eval, envs=envs, deadline=until)
        longest = max(longest, time.perf_counter() - t_score)
        if result.episodes < sweep.eval.episodes:  # the slice ended first: scored whole in a later call
            result.results_json.unlink()
            return False
        return True

    pending = {name: cfg for name, cfg in sweep.runs.items() if _trained_steps(out_dir / name) < cfg.steps}
    if pending:
        for name in [n for n in sweep.runs if n not in pending]:
            scored(name)
    t_train = time.perf_counter()
    _train(pending, dataset, out_dir, sweep.at_once, deadline)
    train_wall = _earlier_train_wall(out_dir) + time.perf_counter() - t_train
    trained = {name: _train_result(out_dir / name) for name in sweep.runs}
    if any(trained[name]["steps"] < cfg.steps for name, cfg in sweep.runs.items()):
        _partial(out_dir, trained, train_wall, "training")
        return []
    rows = []
    for name in sweep.runs:
        if not scored(name):
            _partial(out_dir, trained, train_wall, "scoring")
            return []
        result = json.loads((out_dir / name / "fast_eval" / "fast_results.json").read_text())
        rows.append(
            {
                "run": name,
                "changes": sweep.changes[name],
                "steps": trained[name]["steps"],
                "final_loss": trained[name]["final_loss"],
                "samples_per_s": trained[name]["samples_per_s"],
                "cold_start_s": trained[name]["cold_start_s"],
                "train_episodes": trained[name].get("dataset_episodes"),  # None: trained by a build without it
                "success_rate": result["success_rate"],
                "wilson_95": result["wilson_95"],
                "workshop_rate": result["workshop_rate"],
                "episodes": result["episodes"],
                "fast_eval_episodes_per_min": result["episodes_per_min"],
                "fast_eval_episodes_per_min_warm": result["episodes_per_min_warm"],
            }
        )
    rows.sort(key=lambda r: (-r["success_rate"], -r["workshop_rate"]))
    best = _episodes(out_dir / rows[0]["run"]) if rows else []
    for row in rows[1:]:  # is the best run better than this one, scene by scene? (the runs share their seeds)
        row["paired_with_best"] = paired_comparison(best, _episodes(out_dir / row["run"]))
    summary = {"complete": True, "dataset": str(dataset), "runs": rows, "train_wall_s": train_wall,
               "eval": _plain(sweep.eval)}  # fmt: skip
    (out_dir / "sweep.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return rows


def _episodes(run_dir: Path) -> list[dict[str, Any]]:
    """The episode rows of a run's fast evaluation."""
    lines = (run_dir / "fast_eval" / "fast_episodes.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _earlier_train_wall(out_dir: Path) -> float:
    """The training wall time of the earlier calls of an unfinished sweep (s)."""
    path = out_dir / "sweep.json"
    earlier = json.loads(path.read_text()) if path.is_file() else {}
    return 0.0 if earlier.get("complete", True) else float(earlier["train_wall_s"])


def _train_result(run_dir: Path) -> dict[str, Any]:
    """The run's ``train_result.json`` ({"steps": 0} before it has one)."""
    result = run_dir / "train_result.json"
    return dict(json.loads(result.read_text())) if result.is_file() else {"steps": 0}


def _trained_steps(run_dir: Path) -> int:
    return int(_train_result(run_dir)["steps"])


def _train(runs: dict[str, TrainConfig], dataset: Path, out_dir: Path, at_once: int, deadline: float) -> None:
    """``runs`` trained, ``at_once`` at a time (0: all), each ``so101 train`` in its own process (appending to
    ``<run>/train.log``, in the sweep's process group, SIGTERM when the sweep dies), each limited to what is left
    before ``deadline`` (``time.perf_counter()``); a run that waited for a place starts only with
    :data:`RUN_RESERVE_S` left. Raises PolicyError naming the failures."""
    queue = list(runs.items())
    active: dict[str, ManagedProcess] = {}
    failed = []
    try:
        waited = False  # a run that waited for a place needs RUN_RESERVE_S of the slice; the first ones start
        while queue or active:
            while queue and (at_once == 0 or len(active) < at_once):
                left = deadline - time.perf_counter()
                if waited and left < RUN_RESERVE_S:
                    queue.clear()  # the next slice trains it
                    break
                name, cfg = queue.pop(0)
                active[name] = _start_run(name, cfg if left == float("inf") else _limited(cfg, left), dataset, out_dir)
            for name, child in list(active.items()):
                if (code := child.poll()) is not None:
                    del active[name]
                    waited = True
                    if code != 0:
                        failed.append(f"{name} (exit {code}; {out_dir / name / 'train.log'})")
            if active:
                time.sleep(0.2)
    finally:
        for child in active.values():
            if child.alive():
                child.signal(signal.SIGTERM)
                child.wait()
    if failed:
        raise PolicyError("sweep runs failed: " + ", ".join(failed))


def _limited(cfg: TrainConfig, left_s: float) -> TrainConfig:
    """``cfg`` stopping within ``left_s`` (its own time limit when that is shorter)."""
    limit = min(cfg.time_limit_s, left_s) if cfg.time_limit_s > 0 else left_s
    return dataclasses.replace(cfg, time_limit_s=round(limit, 1))


def _start_run(name: str, cfg: TrainConfig, dataset: Path, out_dir: Path) -> ManagedProcess:
    run_dir = out_dir / name
    run_dir.mkdir(exist_ok=True)
    (run_dir / "train.yaml").write_text(yaml.safe_dump(_plain(cfg), sort_keys=False), encoding="utf-8")
    cmd = [sys.executable, "-m", "so101_cli", "train", "--dataset", str(dataset), "--config",
           str(run_dir / "train.yaml"), "--out", str(run_dir)]  # fmt: skip
    return ManagedProcess(name, cmd, os.environ, run_dir / "train.log", append=True, own_session=False).start()


def _partial(out_dir: Path, trained: dict[str, Any], train_wall: float, stage: str) -> None:
    """``sweep.json`` of a sweep that goes on in the next call (``stage``: training or scoring)."""
    partial = {"complete": False, "stage": stage, "steps": {k: v["steps"] for k, v in trained.items()},
               "train_wall_s": train_wall}  # fmt: skip
    (out_dir / "sweep.json").write_text(json.dumps(partial, indent=2), encoding="utf-8")
