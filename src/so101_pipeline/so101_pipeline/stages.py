"""The six so101 stages: seeds → skillgen → dataset → train → eval → report.

Each is a thin adapter over its library (imported inside the stage, so a pipeline that stops earlier does not
need the later ones): results hold counts and paths relative to the output root.

- ``seeds``: ``so101 seeds record --scripted`` as a child process (it brings up its own zenoh graph; the child
  gets SIGTERM if the pipeline dies, so no node outlives it), or the ``*.npz`` files of ``seeds.path`` copied in.
  The recorder resumes at the first missing episode.
- ``skillgen``: :class:`so101_skillgen.generation.Generator` into ``skillgen/`` (resumes after the last kept demo).
- ``dataset``: ``so101_dataset.build.build_dataset`` (render + LeRobot v3.0, v2.1, bags, report).
- ``train``: ``so101_policy.train.train_policy`` (train.yaml's policy, ACT by default; resumes from its last
  checkpoint).
- ``eval``: ``so101_policy.evaluate.evaluate_policy`` (episodes in the twin; Wilson interval).
- ``report``: ``report/index.html`` (:mod:`.report`), with the run's options ``profile`` (the config file) and
  ``mlflow`` (the pipeline run's ``uri``, ``experiment_id``, ``run_id``).

In a slice (``ctx.deadline``) training stops in time for its final checkpoint and the evaluation starts no
episode it cannot finish; both then end with :class:`~.errors.SliceEnded` and resume in the next slice. The
other stages are stopped at the deadline by the runner; their work is resumable at any point.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import IO, Any

from nodegraph.launch.process import ManagedProcess

from .config import PipelineConfig, SeedsSection
from .errors import SliceEnded, StageDependencyError, StageError
from .fingerprint import hash_file, hash_json
from .report import ReportContext, write_report
from .runner import ProgressFn, Stage, StageContext, StageRecord

POLL_S = 0.5
EXIT_RESERVE_S = 15.0
"""Seconds a slice-aware stage keeps before the deadline for its process to return its result."""
RECORD_ATTEMPTS = 2
CLI_MODULE = "so101_cli"
"""The ``so101`` command, run as ``python -m`` (a process boundary: never imported from here)."""


def _rel(ctx: StageContext, path: str | Path) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ctx.root.resolve()))
    except ValueError:
        return str(p)


def resolve(record: StageRecord, key: str) -> Path:
    """The absolute path stored in ``record.results[key]`` (relative to the output root)."""
    value = Path(str(record.results[key]))
    return value if value.is_absolute() else record.out_dir.parent / value


def _require(module: str, stage: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise StageDependencyError(stage, f"needs {module}, which does not import here ({exc})") from exc


def _seed_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("seed_*.npz") if ".tmp" not in p.name)


# ---------------------------------------------------------------------------------------------------- seeds


def _record_once(ctx: StageContext, s: SeedsSection, args: list[str], log: IO[str]) -> int:
    """One run of ``args``, appending to the stage log (``log`` is open on it) after a ``$ command`` line; it stays
    in the stage's process group, so that stopping the stage at a slice's end stops it too."""
    env = {**os.environ, **ctx.options.get("env", {}), "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}
    log.write(f"$ {' '.join(args)}\n")
    log.flush()
    child = ManagedProcess("seeds record", args, env, ctx.log_path, append=True, own_session=False).start()
    try:
        while child.poll() is None:
            ctx.progress(len(_seed_files(ctx.out_dir)), s.count, "recording seeds (scripted expert in the twin)")
            time.sleep(POLL_S)
    except BaseException:
        child.signal(signal.SIGTERM)
        child.wait(30)
        raise
    return child.wait()


def _record_scripted(ctx: StageContext, s: SeedsSection) -> None:
    """``so101 seeds record --scripted`` in a child process that gets SIGTERM when the pipeline dies; one more
    try when it fails (its graph's start can time out on a loaded machine), resuming what the first recorded."""
    args = [
        sys.executable, "-m", CLI_MODULE, "seeds", "record", "--scripted", "-n", str(s.count),
        "--seed", str(s.seed), "--real-time-factor", str(s.real_time_factor), "--out", str(ctx.out_dir),
        "--service-timeout", str(s.service_timeout_s),
    ]  # fmt: skip
    if s.max_steps:
        args += ["--max-steps", str(s.max_steps)]
    with open(ctx.log_path, "a", encoding="utf-8") as log:
        code = 0
        for attempt in range(1, RECORD_ATTEMPTS + 1):
            code = _record_once(ctx, s, args, log)
            if code == 0:
                return
            log.write(f"[so101 pipeline] seeds record exited with {code} (attempt {attempt}/{RECORD_ATTEMPTS})\n")
    raise StageError("seeds", f"so101 seeds record exited with {code} (log: {ctx.log_path})")


def _copy_seeds(ctx: StageContext, s: SeedsSection) -> None:
    src = Path(s.path)
    files = _seed_files(src) or sorted(src.glob("*.npz"))
    if not files:
        raise StageError("seeds", f"seeds.path {src}: no seed files (*.npz)")
    for i, f in enumerate(files):
        target = ctx.out_dir / f"seed_{i:03d}.npz"
        tmp = target.with_name(target.name + ".part")
        shutil.copyfile(f, tmp)
        os.replace(tmp, target)
        ctx.progress(i + 1, len(files), f"copying {f.name}")


def seeds_external(section: Any) -> Any:
    """Recorded seeds enter the fingerprint by content."""
    if isinstance(section, SeedsSection) and section.source == "path":
        src = Path(section.path)
        files = _seed_files(src) or sorted(src.glob("*.npz"))
        return [[f.name, hash_file(f)] for f in files]
    return None


def run_seeds(ctx: StageContext) -> dict[str, Any]:
    s: SeedsSection = ctx.section
    if s.source == "scripted":
        _record_scripted(ctx, s)
    else:
        _copy_seeds(ctx, s)
    from so101_core.seeds.format import SeedFormatError, load_seed

    files = _seed_files(ctx.out_dir)
    ok = 0
    for f in files:
        try:
            ok += bool(load_seed(f).success)
        except SeedFormatError as exc:
            raise StageError("seeds", f"{f}: {exc}") from None
    if s.source == "scripted" and len(files) != s.count:
        raise StageError("seeds", f"{len(files)} seed files recorded, {s.count} asked for (log: {ctx.log_path})")
    if ok == 0:
        raise StageError("seeds", f"none of the {len(files)} seeds in {ctx.out_dir} succeeded")
    ctx.progress(len(files), len(files), f"{ok}/{len(files)} successful")
    return {"seeds": len(files), "seeds_successful": ok, "source": s.source, "dir": _rel(ctx, ctx.out_dir)}


# ---------------------------------------------------------------------------------------------------- skillgen


def _executor(generator: Any, workers: int, address: str) -> Any:
    """None (attempts in this process), local worker processes, or Ray actors (``address``: a cluster, or
    ``local`` for a Ray started here): so101_skillgen's executors, committed in attempt order either way."""
    if workers <= 1 and not address:
        return None
    executors = _require("so101_skillgen.executors", "skillgen")
    if address:
        return executors.RayExecutor(generator.recipe(), workers, None if address == "local" else address)
    return executors.LocalProcessExecutor(generator.recipe(), workers)


def run_skillgen(ctx: StageContext) -> dict[str, Any]:
    gen_mod = _require("so101_skillgen.generation", "skillgen")
    cfg = ctx.section["config"]
    demos, names = gen_mod.load_seed_dir(resolve(ctx.inputs["seeds"], "dir"))
    profile = str(ctx.section.get("dr_profile") or "")  # pipeline.dr_profile: the evaluation's scenes too
    dr = _require("so101_core.sim.randomization", "skillgen").load_dr_config(profile=profile) if profile else None
    generator = gen_mod.Generator(demos, cfg, names=names, dr=dr)
    target = int(cfg.num_demos)

    def on_event(ev: Any) -> None:
        yld = f"{ev.kept / ev.attempted:.0%}" if ev.attempted else "-"
        ctx.progress(ev.kept, ev.target, f"attempts {ev.attempted}/{ev.max_attempts}  yield {yld}")

    ctx.progress(0, target, "preparing (seed library, reachability)")
    executor = _executor(generator, int(ctx.section["workers"]), str(ctx.options.get("address") or ""))
    try:
        kwargs = {} if executor is None else {"executor": executor}
        summary = generator.run(ctx.out_dir, target, on_event, **kwargs)
    finally:
        if executor is not None:
            executor.close()
    if not summary.complete:
        raise StageError(
            "skillgen", f"attempt budget spent: {summary.kept}/{summary.target} kept (raise skillgen num_trials)"
        )
    return {
        "demos": summary.kept,
        "attempts": summary.attempted,
        "yield": round(summary.yield_, 4),
        "failures_by_reason": summary.failures_by_reason,
        "dir": _rel(ctx, ctx.out_dir),
    }


# ---------------------------------------------------------------------------------------------------- dataset


def progress_adapter(progress: ProgressFn, text: str) -> Callable[..., None]:
    """A callback for a library's progress: ``(phase, done, total)``, ``(done, total)``, ``(done, total, text)``
    or an event object with ``done``/``step``/``completed`` and ``total``/``steps`` attributes."""

    def call(*args: Any, **kwargs: Any) -> None:
        if len(args) == 3 and isinstance(args[0], str):  # (phase, done, total)
            progress(float(args[1]), float(args[2]), f"{text}: {args[0]}")
        elif args and not isinstance(args[0], int | float):
            ev = args[0]
            done = next((getattr(ev, k) for k in ("done", "step", "completed") if hasattr(ev, k)), 0)
            total = next((getattr(ev, k) for k in ("total", "steps") if hasattr(ev, k)), None)
            loss = getattr(ev, "loss", None)
            detail = f"{text}  loss {loss:.4g}" if isinstance(loss, float) else str(getattr(ev, "text", text))
            progress(float(done), None if total is None else float(total), detail)
        elif len(args) >= 2:
            progress(float(args[0]), float(args[1]), str(args[2]) if len(args) > 2 else text)

    return call


def _as_dict(value: Any) -> dict[str, Any]:
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else dict(vars(value))


def run_dataset(ctx: StageContext) -> dict[str, Any]:
    build = _require("so101_dataset.build", "dataset")
    demos_dir = resolve(ctx.inputs["skillgen"], "dir")
    progress = progress_adapter(ctx.progress, "rendering and exporting")
    cfg = ctx.section["config"]
    address = str(ctx.options.get("address") or "")
    result = build.build_dataset(
        demos_dir, ctx.out_dir, cfg, workers=int(cfg.workers), progress=progress, address=address
    )
    # what the train stage reads: the rendered frames themselves when the units keep them, else the v3.0 dataset
    train_dir = result.out_dir if cfg.render.keep_frames else result.v3_dir
    return {
        "episodes": int(result.episodes),
        "frames": int(result.frames),
        "train_dir": _rel(ctx, train_dir),
        "v3_dir": _rel(ctx, result.v3_dir),
        "v21_dir": _rel(ctx, result.v21_dir),
        "bags_dir": _rel(ctx, result.bags_dir),
        "report_dir": _rel(ctx, result.report_dir),
        "times_s": {k: round(v, 3) for k, v in result.times_s.items()},  # render, export, bags, report, total
    }


# ---------------------------------------------------------------------------------------------------- train


def run_train(ctx: StageContext) -> dict[str, Any]:
    train = _require("so101_policy.train", "train")
    dataset = ctx.inputs["dataset"]
    dataset_dir = resolve(dataset, "train_dir" if "train_dir" in dataset.results else "v3_dir")
    progress = progress_adapter(ctx.progress, "training")
    cfg = ctx.section["config"]
    left = ctx.seconds_left() - EXIT_RESERVE_S
    sliced = left < (cfg.time_limit_s or math.inf)  # the slice ends before the config's own time limit
    if sliced:
        cfg = dataclasses.replace(cfg, time_limit_s=max(1.0, left))
    result = train.train_policy(dataset_dir, ctx.out_dir, cfg, progress=progress)
    if sliced and result.steps < cfg.steps:
        raise SliceEnded("train", f"step {result.steps} of {cfg.steps} saved; the next run resumes from it")
    return {
        "policy": cfg.policy,
        "steps": int(result.steps),
        "resumed_from": int(result.resumed_from),
        "final_loss": float(result.final_loss),
        "samples_per_s": float(result.samples_per_s),
        "data_source": result.data_source,
        "checkpoint_dir": _rel(ctx, result.checkpoint_dir),
    }


# ---------------------------------------------------------------------------------------------------- eval


def run_eval(ctx: StageContext) -> dict[str, Any]:
    evaluate = _require("so101_policy.evaluate", "eval")
    checkpoint = resolve(ctx.inputs["train"], "checkpoint_dir")
    ctx.progress(0, None, "episodes in the twin")
    cfg = ctx.section["config"]
    deadline = None
    if ctx.deadline is not None:  # no episode starts that could outlast the slice
        longest = cfg.episode_s / cfg.real_time_factor * 3 + 30.0  # the evaluator's own bound on one episode
        deadline = time.monotonic() + ctx.seconds_left() - EXIT_RESERVE_S - longest
    result = evaluate.evaluate_policy(checkpoint, ctx.out_dir, cfg, deadline=deadline)
    if result.episodes < cfg.episodes:
        raise SliceEnded("eval", f"{result.episodes} of {cfg.episodes} episodes run; the next run resumes")
    ctx.progress(int(result.episodes), int(result.episodes), f"success {result.successes}/{result.episodes}")
    return {
        "success_rate": float(result.success_rate),
        "successes": int(result.successes),
        "episodes": int(result.episodes),
        "wilson_low": float(result.wilson_low),
        "wilson_high": float(result.wilson_high),
        # the upstream workshop's rule (None: unavailable)
        "workshop_successes": result.workshop_successes,
        "workshop_rate": result.workshop_rate,
        "workshop_wilson": list(result.workshop_wilson) if result.workshop_wilson is not None else None,
        "report_html": _rel(ctx, result.report_html),
    }


# ---------------------------------------------------------------------------------------------------- report


def run_report(ctx: StageContext) -> dict[str, Any]:
    tracking = ctx.options.get("mlflow") or {}
    context = ReportContext(
        profile=str(ctx.options.get("profile", "")),
        mlflow_uri=str(tracking.get("uri", "")),
        mlflow_experiment_id=str(tracking.get("experiment_id", "")),
        mlflow_run_id=str(tracking.get("run_id", "")),
    )
    page = write_report(ctx.out_dir / "index.html", ctx.root, dict(ctx.inputs), context)
    ctx.progress(1, 1, "written")
    return {"html": _rel(ctx, page)}


def so101_stages(until: str = "report") -> list[Stage]:
    """The so101 pipeline's stages, in order, up to and including ``until``."""
    stages = [
        Stage("seeds", run_seeds, (), external=seeds_external, description="seed demos"),
        Stage("skillgen", run_skillgen, ("seeds",), description="SkillGen", volatile=("workers",), isolated=True),
        Stage("dataset", run_dataset, ("skillgen",), description="render + export", isolated=True),
        Stage("train", run_train, ("dataset",), description="policy training", isolated=True),
        Stage("eval", run_eval, ("train",), description="evaluation in the twin", isolated=True),
        Stage("report", run_report, ("seeds", "skillgen", "dataset", "train", "eval"), description="HTML report"),
    ]
    names = [s.name for s in stages]
    if until not in names:
        raise ValueError(f"unknown stage {until!r} (stages: {', '.join(names)})")
    keep = stages[: names.index(until) + 1]
    if until != "report":  # a partial pipeline still gets a report of what it has
        keep.append(Stage("report", run_report, tuple(s.name for s in keep), description="HTML report"))
    return keep


def sections(cfg: PipelineConfig, stages: list[Stage]) -> dict[str, Any]:
    """Stage name → what enters its fingerprint."""
    return {s.name: cfg.section(s.name) for s in stages}


__all__ = ["hash_json", "resolve", "sections", "so101_stages"]
