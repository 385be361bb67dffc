"""A resumable stage runner (robot-agnostic).

Each :class:`Stage` declares its upstream stages (``inputs``), its config section and what it writes: everything
under ``<root>/<stage>/``. A stage's **fingerprint** hashes its config section, the output hashes of its upstream
stages (content hashes of their manifests) and any external input it names. On every run, in order:

- ``done.json`` present, same fingerprint, every recorded output file still there with its size, and no upstream
  stage ran in this invocation → **skipped**.
- otherwise the stage runs, and says why (:data:`NO_OUTPUT`, :data:`INTERRUPTED`, :data:`UNFINISHED`,
  :data:`CHANGED`, ``output changed: …``, ``upstream re-ran: …``): ``done.json`` is removed first; the directory is
  **resumed** when it was left by an interrupted run of the same fingerprint (``stage.json`` marker, and the stage
  says it can resume), else wiped;
  then ``stage.run`` does its (resumable, atomic) work, and ``done.json`` (fingerprint, manifest with sha256 of
  every output file, the stage's results, wall time) is written **last**, atomically.

So a SIGKILL at any point leaves either a finished stage (``done.json``) or a directory that the next run resumes
or wipes: never a stage counted done with partial output. A stage that re-runs makes every downstream stage
re-run (its fingerprint changes with the new output hash, and the ``upstream ran`` rule covers a byte-identical
rebuild).

**Slices.** With a ``deadline`` (a time-limited job: ``SO101_SLICE_S``) no stage starts within
:data:`MIN_STAGE_S` of it, a stage sees it in ``ctx.deadline`` and may stop early by raising
:class:`~.errors.SliceEnded`, and an isolated stage still running at the deadline is stopped (SIGTERM; its work
is resumable like after a kill). Either way the stage stays unfinished, the invocation ends with
``PipelineRun.ended`` naming it, and the next invocation resumes it; a stage's ``wall_s`` adds up its slices.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from so101_core.atomic import read_json, write_json

from .errors import PipelineError, SliceEnded, StageError
from .fingerprint import hash_json, intact, manifest, manifest_hash
from .isolation import run_isolated

DONE = "done.json"
MARKER = "stage.json"
BOOKKEEPING = (DONE, MARKER)

UNCHANGED = "unchanged"
NO_OUTPUT = "no output yet"
INTERRUPTED = "interrupted earlier"
"""An unfinished run of the same fingerprint left the directory: a resumable stage resumes it."""
UNFINISHED = "unfinished output of other inputs"
CHANGED = "inputs or config changed"

MIN_STAGE_S = 10.0
"""A slice's last seconds in which no stage starts."""

ProgressFn = Callable[[float, float | None, str], None]
"""``progress(completed, total, text)``: ``total`` None when unknown."""


@dataclass(frozen=True)
class StageRecord:
    """What ``done.json`` holds: the finished stage's fingerprint, outputs and results."""

    stage: str
    fingerprint: str
    output_hash: str
    files: list[dict[str, Any]]
    results: dict[str, Any]
    wall_s: float
    finished: str
    out_dir: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "fingerprint": self.fingerprint,
            "output_hash": self.output_hash,
            "files": self.files,
            "results": self.results,
            "wall_s": round(self.wall_s, 3),
            "finished": self.finished,
        }

    @classmethod
    def load(cls, out_dir: Path) -> StageRecord | None:
        data = read_json(out_dir / DONE)
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                stage=str(data["stage"]),
                fingerprint=str(data["fingerprint"]),
                output_hash=str(data["output_hash"]),
                files=list(data["files"]),
                results=dict(data["results"]),
                wall_s=float(data["wall_s"]),
                finished=str(data["finished"]),
                out_dir=out_dir,
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class StageContext:
    """What a stage's ``run`` gets. ``out_dir``: its own directory (exists); ``inputs``: the records of its
    upstream stages by name; ``resumed``: the directory holds an interrupted run's partial work."""

    name: str
    root: Path
    out_dir: Path
    section: Any
    inputs: Mapping[str, StageRecord]
    resumed: bool
    progress: ProgressFn
    log_path: Path
    options: Mapping[str, Any] = field(default_factory=dict)
    deadline: float | None = None
    """The slice's end (``time.time()``), or None: a stage that can stop cleanly before it does so and raises
    :class:`~.errors.SliceEnded`."""

    def seconds_left(self) -> float:
        """Seconds until the slice's end (infinite without one)."""
        return float("inf") if self.deadline is None else self.deadline - time.time()


@dataclass(frozen=True)
class Stage:
    """One step of a pipeline. ``run(ctx)`` returns JSON-able results (counts, paths relative to the root);
    numeric top-level results are logged as metrics. ``external(section)`` names inputs outside the pipeline
    (e.g. a seed directory) by a content hash. ``version`` is part of the fingerprint (bump it when the stage's
    code changes what it writes)."""

    name: str
    run: Callable[[StageContext], dict[str, Any]]
    inputs: tuple[str, ...] = ()
    resumable: bool = True
    external: Callable[[Any], Any] | None = None
    version: int = 1
    description: str = ""
    volatile: tuple[str, ...] = ()
    """Keys of a mapping section that do not change the output (e.g. worker counts): not fingerprinted."""
    isolated: bool = False
    """Run in a child process that takes its own workers down with it (see :mod:`.isolation`); ``run`` must
    then be a module-level function."""


@dataclass(frozen=True)
class StageRun:
    """The outcome of one stage in one invocation."""

    name: str
    skipped: bool
    reason: str
    resumed: bool
    wall_s: float
    record: StageRecord


@dataclass(frozen=True)
class PipelineRun:
    """The outcome of one invocation: the stages it reached in order, total wall time (s); ``ended``: the stage
    in (or before) which the slice ended, None when the pipeline finished."""

    root: Path
    stages: list[StageRun]
    wall_s: float
    ended: str | None = None

    def record(self, name: str) -> StageRecord:
        for s in self.stages:
            if s.name == name:
                return s.record
        raise KeyError(name)


class Reporter(Protocol):
    """Progress display: one line per stage (see :mod:`.progress`)."""

    def stage_started(self, name: str, reason: str, resumed: bool) -> ProgressFn: ...

    def stage_finished(self, name: str, skipped: bool, wall_s: float, reason: str) -> None: ...


class StageTrack(Protocol):
    """The tracking run of one stage."""

    def log(self, params: Mapping[str, Any], metrics: Mapping[str, float], tags: Mapping[str, str]) -> None: ...


class Tracker(Protocol):
    """Experiment tracking: one run per pipeline, a nested run per stage (see :mod:`.tracking`); the stage
    runs inside its nested run, so its own logging lands there."""

    def stage(self, name: str) -> AbstractContextManager[StageTrack]: ...


class NullTrack:
    """Tracking off."""

    def log(self, params: Mapping[str, Any], metrics: Mapping[str, float], tags: Mapping[str, str]) -> None:
        return None


class NullTracker:
    """Tracking off."""

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[StageTrack]:
        yield NullTrack()


class NullReporter:
    """No display."""

    def stage_started(self, name: str, reason: str, resumed: bool) -> ProgressFn:
        return lambda completed, total, text: None

    def stage_finished(self, name: str, skipped: bool, wall_s: float, reason: str) -> None:
        return None


def _check(stages: Sequence[Stage]) -> None:
    seen: set[str] = set()
    for s in stages:
        if not s.name or "/" in s.name or s.name.startswith("."):
            raise PipelineError(f"bad stage name {s.name!r}")
        if s.name in seen:
            raise PipelineError(f"stage {s.name!r} declared twice")
        for i in s.inputs:
            if i not in seen:
                raise PipelineError(f"stage {s.name!r} needs {i!r}, which is not an earlier stage")
        seen.add(s.name)


def numeric(results: Mapping[str, Any]) -> dict[str, float]:
    """Top-level int/float results (not bools): what is logged as metrics."""
    return {k: float(v) for k, v in results.items() if isinstance(v, int | float) and not isinstance(v, bool)}


class Runner:
    """Runs ``stages`` (in order; inputs must be earlier stages) under ``root`` with their config ``sections``
    (stage name → parsed section; it enters the fingerprint as canonical JSON). With ``capture``, whatever a
    stage and its child processes print (encoder chatter, library warnings) goes to ``<root>/logs/<stage>.log``
    instead of the terminal, where the reporter draws (it writes to a copy of the original stderr)."""

    def __init__(
        self,
        root: str | Path,
        stages: Sequence[Stage],
        sections: Mapping[str, Any],
        *,
        reporter: Reporter | None = None,
        tracker: Tracker | None = None,
        options: Mapping[str, Any] | None = None,
        capture: bool = False,
        deadline: float | None = None,
    ) -> None:
        _check(stages)
        self.root = Path(root)
        self.stages = list(stages)
        self.sections = dict(sections)
        self.reporter: Reporter = reporter or NullReporter()
        self.tracker: Tracker = tracker or NullTracker()
        self.options = dict(options or {})
        self.capture = capture
        self.deadline = deadline

    def fingerprint(self, stage: Stage, records: Mapping[str, StageRecord]) -> str:
        section = self.sections.get(stage.name)
        if isinstance(section, Mapping) and stage.volatile:
            section = {k: v for k, v in section.items() if k not in stage.volatile}
        return hash_json(
            {
                "stage": stage.name,
                "version": stage.version,
                "section": section,
                "inputs": {i: records[i].output_hash for i in stage.inputs},
                "external": stage.external(section) if stage.external else None,
            }
        )

    def plan(self) -> list[tuple[str, str]]:
        """(stage, why it would run or ``skip``) without running anything; assumes a run stage changes."""
        out: list[tuple[str, str]] = []
        records: dict[str, StageRecord] = {}
        ran: set[str] = set()
        for stage in self.stages:
            if upstream := [i for i in stage.inputs if i in ran]:
                out.append((stage.name, f"upstream re-runs: {', '.join(upstream)}"))
                ran.add(stage.name)
                continue
            reason = self._why(stage, self.fingerprint(stage, records), ran)
            rec = StageRecord.load(self.root / stage.name)
            if reason is None and rec is not None:
                records[stage.name] = rec
                out.append((stage.name, "skip"))
            else:
                out.append((stage.name, reason or "run"))
                ran.add(stage.name)
        return out

    def _why(self, stage: Stage, fp: str, ran: set[str]) -> str | None:
        """Why ``stage`` must run, or None to skip it."""
        sdir = self.root / stage.name
        rec = StageRecord.load(sdir)
        if rec is None:
            if not sdir.exists():
                return NO_OUTPUT
            marker = read_json(sdir / MARKER)
            return INTERRUPTED if isinstance(marker, dict) and marker.get("fingerprint") == fp else UNFINISHED
        if rec.fingerprint != fp:
            return CHANGED
        if missing := intact(rec.out_dir, rec.files):
            return f"output changed: {missing}"
        if upstream := [i for i in stage.inputs if i in ran]:
            return f"upstream re-ran: {', '.join(upstream)}"
        return None

    def run(self) -> PipelineRun:
        t0 = time.perf_counter()
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "logs").mkdir(exist_ok=True)
        records: dict[str, StageRecord] = {}
        ran: set[str] = set()
        runs: list[StageRun] = []
        for stage in self.stages:
            fp = self.fingerprint(stage, records)
            reason = self._why(stage, fp, ran)
            if reason is not None and self.deadline is not None and time.time() + MIN_STAGE_S > self.deadline:
                return PipelineRun(self.root, runs, time.perf_counter() - t0, ended=stage.name)
            with self.tracker.stage(stage.name) as track:
                s0 = time.perf_counter()
                if reason is None:
                    rec = StageRecord.load(self.root / stage.name)
                    assert rec is not None
                    self.reporter.stage_started(stage.name, "skip", False)
                    run = StageRun(stage.name, True, UNCHANGED, False, time.perf_counter() - s0, rec)
                else:
                    try:
                        rec, resumed = self._execute(stage, fp, reason, records)
                    except SliceEnded as ended:
                        self.reporter.stage_finished(stage.name, False, time.perf_counter() - s0, str(ended))
                        track.log({"fingerprint": fp}, {"wall_s": time.perf_counter() - s0}, {"slice_ended": "true"})
                        return PipelineRun(self.root, runs, time.perf_counter() - t0, ended=stage.name)
                    ran.add(stage.name)
                    run = StageRun(stage.name, False, reason, resumed, time.perf_counter() - s0, rec)
                self.reporter.stage_finished(stage.name, run.skipped, run.wall_s, run.reason)
                runs.append(run)
                records[stage.name] = rec
                self._track(track, stage, run, fp)
        return PipelineRun(self.root, runs, time.perf_counter() - t0)

    def _execute(
        self, stage: Stage, fp: str, reason: str, records: Mapping[str, StageRecord]
    ) -> tuple[StageRecord, bool]:
        sdir = self.root / stage.name
        (sdir / DONE).unlink(missing_ok=True)  # first: from here on the stage is not done
        resume = stage.resumable and reason == INTERRUPTED
        if not resume and sdir.exists():
            shutil.rmtree(sdir)
        sdir.mkdir(parents=True, exist_ok=True)
        earlier = read_json(sdir / MARKER) if resume else None
        earlier_s = float(earlier.get("elapsed_s", 0.0)) if isinstance(earlier, dict) else 0.0  # earlier slices
        write_json(sdir / MARKER, {"stage": stage.name, "fingerprint": fp, "started": _now(), "elapsed_s": earlier_s})
        progress = self.reporter.stage_started(stage.name, reason, resume)
        ctx = StageContext(
            name=stage.name,
            root=self.root,
            out_dir=sdir,
            section=self.sections.get(stage.name),
            inputs={i: records[i] for i in stage.inputs},
            resumed=resume,
            progress=progress,
            log_path=self.root / "logs" / f"{stage.name}.log",
            options=self.options,
            deadline=self.deadline,
        )
        t0 = time.perf_counter()
        try:
            if stage.isolated:
                results = run_isolated(stage.run, ctx)
            else:
                with capture_output(ctx.log_path) if self.capture else contextlib.nullcontext():
                    results = stage.run(ctx)
        except SliceEnded:  # unfinished: the marker stays, with this slice's time added
            marker = {"stage": stage.name, "fingerprint": fp, "started": _now()}
            write_json(sdir / MARKER, {**marker, "elapsed_s": earlier_s + time.perf_counter() - t0})
            raise
        except StageError:
            raise
        except Exception as exc:  # the directory stays as it is: the next run resumes or wipes it
            detail = str(exc) if isinstance(exc, PipelineError) else f"{type(exc).__name__}: {exc}"
            raise StageError(stage.name, f"{detail} (log: {ctx.log_path})") from exc
        wall = earlier_s + time.perf_counter() - t0
        files = manifest(sdir, exclude=BOOKKEEPING)
        rec = StageRecord(
            stage=stage.name,
            fingerprint=fp,
            output_hash=manifest_hash(files),
            files=[{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files],
            results=dict(results),
            wall_s=wall,
            finished=_now(),
            out_dir=sdir,
        )
        write_json(sdir / DONE, rec.to_json())  # last: the stage is done
        (sdir / MARKER).unlink(missing_ok=True)
        return rec, resume

    def _track(self, track: StageTrack, stage: Stage, run: StageRun, fp: str) -> None:
        params = {"fingerprint": fp, "section": hash_json(self.sections.get(stage.name))}
        metrics = {"wall_s": run.wall_s, **({} if run.skipped else numeric(run.record.results))}
        tags = {"skipped": str(run.skipped).lower(), "reason": run.reason, "resumed": str(run.resumed).lower()}
        track.log(params, metrics, tags)


@contextlib.contextmanager
def capture_output(path: Path) -> Iterator[None]:
    """Point file descriptors 1 and 2 (this process's and its future children's) at ``path`` (appended)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
