"""``so101 pipeline run``: load the config, run the stages, write ``summary.json``, return the summary.

``summary.json`` (in the output directory, rewritten by every invocation): ``success_rate``, ``episodes``,
``successes``, ``wilson_low``/``wilson_high`` (and the workshop rule's: ``workshop_successes``,
``workshop_success_rate``, ``workshop_wilson``; None where the rule is unavailable), ``wall_s`` (this invocation),
counts (``seeds``, ``demos``, ``attempts``, ``yield`` with its Wilson interval, ``frames``), per stage ``skipped``,
``reason``, ``resumed``, ``wall_s`` (this invocation) and ``produced_wall_s`` (the run that made its output, all its
slices), and the output paths. In slices (``RunOptions.slice_s``): ``complete``, ``slice_ended`` (the stage the slice
ended in, or null), ``slices`` (invocations since the last complete one) and ``pipeline_wall_s`` (the finished stages'
``produced_wall_s`` added up).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from so101_core.atomic import write_json
from so101_core.threads import thread_env
from so101_policy.metrics import wilson_interval

from .config import PipelineConfig, load_pipeline_config, resolve_section
from .errors import PipelineConfigError, StageDependencyError
from .runner import PipelineRun, Reporter, Runner
from .stages import resolve, sections, so101_stages
from .tracking import MlflowTracker

PARSERS: dict[str, tuple[str, str, str]] = {
    "skillgen": ("so101_skillgen.config", "parse_skillgen_config", "skillgen"),
    "dataset": ("so101_dataset.config", "parse_dataset_config", "dataset"),
    "train": ("so101_policy.config", "parse_train_config", "train"),
    "eval": ("so101_policy.config", "parse_eval_config", "eval"),
}
"""Stage → (module, its library's parser (mapping → config), the parser's field prefix)."""


SLICE_RESERVE_S = 30.0
"""The last seconds of a slice, kept for stopping a stage and writing the summary."""


@dataclass(frozen=True)
class RunOptions:
    """``out``: output directory ("" = the config's); ``until``: last stage; ``address``: Ray cluster
    address for generation and rendering ("" = local processes); ``slice_s``: seconds this invocation may take
    (0 = no limit): the stages stop :data:`SLICE_RESERVE_S` before it, resumably (see :mod:`.runner`)."""

    out: str = ""
    until: str = "report"
    address: str = ""
    slice_s: float = 0.0

    def deadline(self, start: float) -> float | None:
        """The stages' deadline (``time.time()``) of an invocation started at ``start``, or None."""
        return start + self.slice_s - min(SLICE_RESERVE_S, self.slice_s / 4) if self.slice_s > 0 else None


def resolve_config(cfg: PipelineConfig, stage_names: list[str]) -> PipelineConfig:
    """Parse the library sections of the stages that will run (each by its own library's validator)."""
    for name in stage_names:
        if name not in PARSERS:
            continue
        module, func, root = PARSERS[name]
        try:
            parser = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError) as exc:
            raise StageDependencyError(name, f"needs {module}.{func}, which does not import here ({exc})") from exc
        cfg = resolve_section(cfg, name, parser, root)
    if {"skillgen", "eval"} & set(stage_names):  # the stages that draw scenes from pipeline.dr_profile
        _check_scene_distribution(cfg)
    return _one_scene_distribution(cfg) if "eval" in stage_names else cfg


def _check_scene_distribution(cfg: PipelineConfig) -> None:
    """PipelineConfigError naming ``pipeline.dr_profile`` when dr.yaml lacks that profile (or does not load)."""
    from so101_core.sim.randomization import load_dr_config

    try:
        load_dr_config(profile=cfg.dr_profile or None)
    except ValueError as exc:
        raise PipelineConfigError("pipeline.dr_profile", str(exc), file=cfg.file) from None


def _one_scene_distribution(cfg: PipelineConfig) -> PipelineConfig:
    """``cfg`` whose evaluation draws its scenes from ``pipeline.dr_profile`` (the demos' distribution); an
    evaluation section that sets another profile is an error naming both fields."""
    lib = cfg.libraries["eval"]
    evaluated = lib.merged.get("dr_profile")
    if evaluated and evaluated != cfg.dr_profile:
        overridden = "dr_profile" in lib.overrides
        raise PipelineConfigError(
            "pipeline.eval.set.dr_profile" if overridden else "eval.dr_profile",
            f"is {evaluated!r}, but the demos are generated in pipeline.dr_profile {cfg.dr_profile!r}: "
            "set the scene distribution once, at pipeline.dr_profile",
            file=cfg.file if overridden else lib.file,
        )
    parsed = dataclasses.replace(lib.parsed, dr_profile=cfg.dr_profile)
    libraries = {**cfg.libraries, "eval": dataclasses.replace(lib, parsed=parsed)}
    return dataclasses.replace(cfg, libraries=libraries)


def _shown(file: str) -> str:
    """``file`` as the user would type it: relative to the working directory when it lies below it."""
    path = Path(file).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else file


def _prepare(config: str | Path | PipelineConfig | None, options: RunOptions) -> tuple[PipelineConfig, Runner]:
    cfg = config if isinstance(config, PipelineConfig) else load_pipeline_config(config)
    stages = so101_stages(options.until)
    cfg = resolve_config(cfg, [s.name for s in stages])
    root = Path(options.out or cfg.out)
    runner_options = {"address": options.address, "env": thread_env(cfg.threads), "profile": _shown(cfg.file)}
    runner = Runner(root, stages, sections(cfg, stages), options=runner_options, capture=True)
    return cfg, runner


def plan_pipeline(
    config: str | Path | PipelineConfig | None, out: str = "", until: str = "report"
) -> list[tuple[str, str]]:
    """(stage, ``skip`` or why it would run), running nothing."""
    return _prepare(config, RunOptions(out=out, until=until))[1].plan()


def run_pipeline(
    config: str | Path | PipelineConfig | None = None,
    options: RunOptions | None = None,
    *,
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """Run (or resume, or skip through) the pipeline; returns the summary written to ``summary.json``."""
    options = options or RunOptions()
    start = time.time()
    cfg, runner = _prepare(config, options)
    runner.deadline = options.deadline(start)
    if reporter is not None:
        runner.reporter = reporter
    root = runner.root
    slices = _slices_so_far(root) + 1
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if cfg.tracking.mlflow:
        with MlflowTracker(root, uri=cfg.tracking.uri, experiment=cfg.tracking.experiment) as tracker:
            runner.tracker = tracker
            runner.options["mlflow"] = {
                "uri": tracker.uri,
                "experiment_id": tracker.experiment_id,
                "run_id": tracker.run_id,
            }
            result = runner.run()
            summary = build_summary(result, cfg, started, tracker.uri, tracker.run_id, slices)
            path = write_json(root / "summary.json", summary)
            metrics = {k: float(summary[k]) for k in ("wall_s", "success_rate") if summary.get(k) is not None}
            tracker.log_pipeline({"config": cfg.file, "until": options.until}, metrics, [path])
    else:
        result = runner.run()
        summary = build_summary(result, cfg, started, "", "", slices)
        write_json(root / "summary.json", summary)
    return summary


def _slices_so_far(root: Path) -> int:
    """Invocations of an unfinished sliced run before this one (0 after a complete run or none)."""
    try:
        last = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0
    return int(last.get("slices", 1)) if last.get("complete") is False else 0


def build_summary(
    run: PipelineRun, cfg: PipelineConfig, started: str, uri: str, run_id: str, slices: int = 1
) -> dict[str, Any]:
    """The summary of one invocation (see the module docstring)."""
    records = {s.name: s.record for s in run.stages}
    res = {name: rec.results for name, rec in records.items()}
    outputs: dict[str, str] = {"root": str(run.root.resolve())}
    for name, rec in records.items():
        for key in rec.results:
            if str(key).endswith(("dir", "html")):
                outputs[f"{name}.{key}"] = str(resolve(rec, key).resolve())
    gen = res.get("skillgen", {})
    ev = res.get("eval", {})
    yield_ci = wilson_interval(int(gen["demos"]), int(gen["attempts"])) if gen else None
    return {
        "config": cfg.file,
        "overrides": list(cfg.overrides),
        "started": started,
        "complete": run.ended is None,
        "slice_ended": run.ended,
        "slices": slices,
        "wall_s": round(run.wall_s, 3),
        "pipeline_wall_s": round(sum(s.record.wall_s for s in run.stages), 3),
        "success_rate": ev.get("success_rate"),
        "successes": ev.get("successes"),
        "episodes": ev.get("episodes"),
        "wilson_low": ev.get("wilson_low"),
        "wilson_high": ev.get("wilson_high"),
        "workshop_successes": ev.get("workshop_successes"),
        "workshop_success_rate": ev.get("workshop_rate"),
        "workshop_wilson": ev.get("workshop_wilson"),
        "seeds": res.get("seeds", {}).get("seeds"),
        "demos": gen.get("demos"),
        "attempts": gen.get("attempts"),
        "yield": gen.get("yield"),
        "yield_wilson": [round(yield_ci.low, 4), round(yield_ci.high, 4)] if yield_ci else None,
        "failures_by_reason": gen.get("failures_by_reason"),
        "dataset_episodes": res.get("dataset", {}).get("episodes"),
        "frames": res.get("dataset", {}).get("frames"),
        "dataset_times_s": res.get("dataset", {}).get("times_s"),
        "train_steps": res.get("train", {}).get("steps"),
        "final_loss": res.get("train", {}).get("final_loss"),
        "train_samples_per_s": res.get("train", {}).get("samples_per_s"),
        "stages": {
            s.name: {
                "skipped": s.skipped,
                "reason": s.reason,
                "resumed": s.resumed,
                "wall_s": round(s.wall_s, 3),
                "produced_wall_s": round(s.record.wall_s, 3),
                "fingerprint": s.record.fingerprint,
            }
            for s in run.stages
        },
        "outputs": outputs,
        "report_html": outputs.get("report.html"),
        "mlflow": {"tracking_uri": uri, "run_id": run_id} if uri else None,
        "machine": {"host": platform.node(), "python": platform.python_version()},
    }
