"""The SkillGen generation loop (generation_guarantee): attempts in the twin until ``num_demos`` are kept
or ``num_demos · num_trials`` attempts are spent; resumable through :class:`~.output.OutputDir`.

Attempt ``i`` is fully determined by ``(random_seed, i)``: its scene seed (domain randomization) and the
RNG that draws sources among the k nearest. Kept demos are :class:`SeedDemo` (``source="skillgen"``)
with provenance in ``extra``: ``attempt``, ``scene_seed``, ``random_seed``, ``sources`` (per subtask:
kind, object, source seed, the k candidates).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.seeds.format import SeedDemo, load_seed
from so101_core.sim.config import SimConfig, TaskConfig, load_task_config
from so101_core.sim.randomization import DRConfig
from so101_core.sim.scene import is_standing
from so101_core.sim.twin import Twin

from .attempt import AttemptOutcome, AttemptRunner
from .config import SkillGenConfig
from .errors import SeedMismatchError, SkillGenError
from .executors import AttemptExecutor, AttemptRecipe, InProcessExecutor
from .library import SeedLibrary, build_library
from .output import OutputDir
from .reach import check_reachability
from .tracking import make_tracker

LOOKAHEAD_PER_WORKER = 64
"""Attempts submitted past the oldest uncommitted one, per worker. Results are committed in index order, so
a slow attempt (a failing one backtracks through its variants: 10–35 s where the median is 1 s) holds back
every later commit; the workers keep running later attempts only while they lie inside this window (2 per
worker left 16 workers idle half the time). Costs up to this many finished outcomes held per worker
(single-vial ≈ 50 kB, multi-vial ≈ 0.3 MB each)."""


@dataclass(frozen=True)
class ProgressEvent:
    """Reported after every attempt: ``attempt`` index, its ``reason`` (None = kept), running totals."""

    attempt: int
    reason: str | None
    attempted: int
    kept: int
    target: int
    max_attempts: int


@dataclass(frozen=True)
class GenerationSummary:
    """Totals of a run (including what a resumed run found already done). ``yield_`` = kept ÷ attempted."""

    out_dir: str
    target: int
    kept: int
    attempted: int
    failures_by_reason: dict[str, int]
    wall_s: float
    attempts_this_run: int
    kept_this_run: int
    complete: bool
    sources: list[str] = field(default_factory=list)
    kept_workshop: int = 0  # kept demos that also pass the upstream workshop rule
    cancelled: bool = False
    workers: int = 1
    worker_restarts: int = 0

    @property
    def yield_(self) -> float:
        return self.kept / self.attempted if self.attempted else 0.0

    @property
    def yield_workshop(self) -> float:
        """Kept demos passing the workshop rule too, per attempt."""
        return self.kept_workshop / self.attempted if self.attempted else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "out_dir": self.out_dir,
            "target": self.target,
            "kept": self.kept,
            "attempted": self.attempted,
            "yield": round(self.yield_, 4),
            "kept_workshop": self.kept_workshop,
            "yield_workshop": round(self.yield_workshop, 4),
            "cancelled": self.cancelled,
            "workers": self.workers,
            "worker_restarts": self.worker_restarts,
            "failures_by_reason": self.failures_by_reason,
            "wall_s_this_run": round(self.wall_s, 3),
            "attempts_this_run": self.attempts_this_run,
            "kept_this_run": self.kept_this_run,
            "kept_per_min_this_run": round(60.0 * self.kept_this_run / self.wall_s, 2) if self.wall_s > 0 else None,
            "complete": self.complete,
            "source_seeds": self.sources,
        }


def attempt_seeds(random_seed: int, attempt: int) -> tuple[int, np.random.Generator]:
    """Scene seed (for ``Twin.reset``) and source-selection RNG of attempt ``attempt``."""
    scene = int(np.random.SeedSequence([random_seed, attempt]).generate_state(1, dtype=np.uint32)[0])
    return scene, np.random.default_rng([random_seed, attempt, 1])


def load_seed_dir(directory: str | Path) -> tuple[list[SeedDemo], list[str]]:
    """Every ``*.npz`` seed under ``directory`` with its relative path as name (raises when none)."""
    root = Path(directory)
    files = sorted(p for p in root.glob("**/*.npz") if ".tmp" not in p.name)
    if not files:
        raise SkillGenError(f"{directory}: no seed files (*.npz)")
    return [load_seed(f) for f in files], [str(f.relative_to(root)) for f in files]


def _fingerprint(cfg: SkillGenConfig, names: Sequence[str], demos: Sequence[SeedDemo]) -> dict[str, Any]:
    """What must not change between a run and its resumption: the seeds and every setting that shapes an
    attempt (the demo count and the attempt budget may change)."""
    h = hashlib.sha256()
    for n, d in zip(names, demos, strict=True):
        h.update(n.encode())
        h.update(np.ascontiguousarray(d.actions).tobytes())
    shaping = replace(cfg, num_demos=1, num_trials=1, generation_guarantee=True)
    c = hashlib.sha256(json.dumps(asdict(shaping), sort_keys=True).encode()).hexdigest()[:16]
    return {"random_seed": cfg.random_seed, "seeds_sha256": h.hexdigest()[:16], "config_sha256": c}


def _trajectory(
    outcome: AttemptOutcome, success: bool, scene_seed: int, hz: float, task: str, extra: dict[str, Any]
) -> SeedDemo:
    """An attempt's rollout as a seed-format demo (``extra`` beside the attempt's scene record)."""
    return SeedDemo(
        t=np.arange(len(outcome.actions), dtype=np.float64) / hz,
        joint_positions=outcome.joint_positions,
        actions=outcome.actions,
        object_poses=outcome.object_poses,
        success=success,
        task=task,
        source="skillgen",
        seed=scene_seed,
        control_hz=hz,
        extra={**extra, **outcome.scene},
    )


def _demo(
    outcome: AttemptOutcome, attempt: int, scene_seed: int, cfg: SkillGenConfig, hz: float, task: str
) -> SeedDemo:
    extra = {
        "attempt": attempt,
        "scene_seed": scene_seed,
        "random_seed": cfg.random_seed,
        "sources": outcome.sources,
        "workshop_rule": bool(outcome.workshop),
        "smoothing": {"window": outcome.smoothing_window, "order": cfg.smoothing.order, "joints": "arm"},
    }
    return _trajectory(outcome, True, scene_seed, hz, task, extra)


class Generator:
    """Seeds + configs → a prepared twin, tracker, library and attempt runner (reachability checked)."""

    def __init__(
        self,
        demos: Sequence[SeedDemo],
        cfg: SkillGenConfig,
        *,
        names: Sequence[str] | None = None,
        sim: SimConfig | None = None,
        dr: DRConfig | None = None,
        task: TaskConfig | None = None,
        config_dir: Path | None = None,
        check_reach: bool = True,
    ) -> None:
        self.cfg = cfg
        self.names = list(names) if names is not None else [f"seed_{i}" for i in range(len(demos))]
        self.demos = list(demos)
        self.task = task or load_task_config()
        self._sim, self._dr, self._config_dir = sim, dr, config_dir
        self.twin = Twin(sim, dr, self.task)
        _check_seed_objects(self.demos, self.names, self.twin)
        self.tracker = make_tracker(self.twin, cfg.ik, config_dir)
        offsets = np.asarray(self.twin.config.rack.slot_offsets(), dtype=np.float64)
        self.library: SeedLibrary = build_library(
            self.demos, self.tracker, cfg, self.twin.grasp_geometry().point, self.names, offsets
        )
        self.reach_edges: list[str] = []  # unreachable range extremes (yield drops there); see reach.py
        if check_reach:
            self.reach_edges = check_reachability(self.twin, self.twin.dr, self.library, self.tracker, cfg)
        self.runner = AttemptRunner(self.twin, self.tracker, self.library, cfg, self.task)

    def recipe(self) -> AttemptRecipe:
        """What a worker process needs to rebuild this generator (for the parallel executors)."""
        return AttemptRecipe(
            tuple(self.demos), tuple(self.names), self.cfg, self._sim, self._dr, self.task, self._config_dir
        )

    def attempt(self, index: int) -> tuple[int, AttemptOutcome]:
        """Run attempt ``index``; returns (scene seed, outcome)."""
        scene, rng = attempt_seeds(self.cfg.random_seed, index)
        return scene, self.runner.run(scene, rng)

    def run(
        self,
        out_dir: str | Path,
        num_demos: int | None = None,
        progress: Callable[[ProgressEvent], None] | None = None,
        *,
        executor: AttemptExecutor | None = None,
        should_stop: Callable[[], bool] | None = None,
        max_attempts: int | None = None,
    ) -> GenerationSummary:
        """Generate into ``out_dir`` (resuming it) until ``num_demos`` (default ``cfg.num_demos``) are kept,
        the attempt budget (``max_attempts``, default ``num_demos · num_trials``) is spent or ``should_stop()``
        turns true (checked after every committed attempt: a cancel costs at most the attempts in flight).

        Attempts run on ``executor`` (default: in this process); results are committed in attempt order,
        so any executor keeps the same demos. Writes ``summary.json`` and returns the summary.
        """
        cfg = self.cfg
        target = num_demos if num_demos is not None else cfg.num_demos
        budget = target * cfg.num_trials if cfg.generation_guarantee else target
        if max_attempts:
            budget = max_attempts
        out = OutputDir.open(out_dir, _fingerprint(cfg, self.names, self.demos))
        hz = self.twin.config.physics.control_hz
        ex = executor or InProcessExecutor(self)
        window = LOOKAHEAD_PER_WORKER * ex.workers
        t0 = time.perf_counter()
        runs = kept_run = 0
        done: dict[int, tuple[int, AttemptOutcome]] = {}
        submitted = out.next_attempt
        stopped = False
        while out.kept < target and out.next_attempt < budget and not stopped:
            while submitted < budget and submitted < out.next_attempt + window:
                ex.submit(submitted)
                submitted += 1
            for i, scene, outcome in ex.collect(0.5):
                done[i] = (scene, outcome)
            while out.next_attempt in done and out.kept < target:
                i = out.next_attempt
                scene, outcome = done.pop(i)
                runs += 1
                if outcome.success:
                    out.add_demo(_demo(outcome, i, scene, cfg, hz, self.demos[0].task), i)
                    kept_run += 1
                else:
                    out.add_failure(_failure(outcome, i, scene, hz, self.demos[0].task), i)
                if progress is not None:
                    progress(ProgressEvent(i, outcome.reason, out.next_attempt, out.kept, target, budget))
                if should_stop is not None and should_stop():
                    stopped = True
                    break
        ex.drop_queued()
        if executor is None:
            ex.close()
        reasons = Counter(str(f["reason"]) for f in out.failures)
        summary = GenerationSummary(
            out_dir=str(out.root),
            target=target,
            kept=out.kept,
            attempted=out.next_attempt,
            failures_by_reason=dict(sorted(reasons.items())),
            wall_s=time.perf_counter() - t0,
            attempts_this_run=runs,
            kept_this_run=kept_run,
            complete=out.kept >= target,
            sources=list(self.library.seed_names),
            kept_workshop=out.kept_workshop,
            cancelled=stopped and out.kept < target,
            workers=ex.workers,
            worker_restarts=ex.restarts,
        )
        out.write_summary(summary.to_json())
        return summary


def _check_seed_objects(demos: Sequence[SeedDemo], names: Sequence[str], twin: Twin) -> None:
    """Seeds must record the poses of exactly the scene's task objects (a multi-vial seed needs the multi-vial
    task); the vials standing in pre-filled slots are scenery, not subtask objects: either may have them."""
    want = sorted(n for n in twin.object_names if not is_standing(n))
    variant = twin.task.variant
    for name, demo in zip(names, demos, strict=True):
        got = sorted(n for n in demo.object_poses if not is_standing(n))
        if got != want:
            raise SeedMismatchError(
                f"seed {name} records objects {got}, the task variant {variant!r} has {want}: pick the task "
                "the seeds were recorded with"
            )


def _failure(
    outcome: AttemptOutcome, attempt: int, scene: int, hz: float, task: str
) -> tuple[dict[str, Any], SeedDemo | None]:
    """A failed attempt's record (failures.json) and its trajectory (replayable like a demo, success False;
    None when it failed before its first step)."""
    record = {
        "attempt": attempt, "scene_seed": scene, "reason": outcome.reason, "detail": outcome.detail,
        "steps": len(outcome.actions), "sources": outcome.sources, "workshop_rule": bool(outcome.workshop),
    }  # fmt: skip
    if len(outcome.actions) == 0:
        return record, None
    extra = {"attempt": attempt, "scene_seed": scene, "reason": outcome.reason, "detail": outcome.detail}
    return record, _trajectory(outcome, False, scene, hz, task, extra)


def generate(
    seeds: str | Path | Sequence[SeedDemo],
    out_dir: str | Path,
    cfg: SkillGenConfig,
    *,
    num_demos: int | None = None,
    sim: SimConfig | None = None,
    dr: DRConfig | None = None,
    task: TaskConfig | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
) -> GenerationSummary:
    """One call: load seeds (a directory or demos), prepare, generate into ``out_dir`` (resumable)."""
    if isinstance(seeds, str | Path):
        demos, names = load_seed_dir(seeds)
    else:
        demos, names = list(seeds), None
    gen = Generator(demos, cfg, names=names, sim=sim, dr=dr, task=task)
    return gen.run(out_dir, num_demos, progress)
