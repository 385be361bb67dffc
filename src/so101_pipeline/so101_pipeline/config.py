"""``config/pipeline.yaml`` → :class:`PipelineConfig`; every error names the file and the dotted field.

The pipeline's own settings (``seeds``, ``tracking``, the stages' worker counts) are validated here. The
``skillgen``, ``dataset``, ``train`` and ``eval`` sections point at the stage library's own YAML (``config:``,
relative to the config directory) and override its fields with ``set:`` (deep-merged); the merged mapping is
validated by that library's parser, so there is one validator per setting. An error in ``set:`` names
``pipeline.<section>.set.<field>`` in the pipeline file; one in the base file names that file and field.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from so101_core.config import ConfigError, Fields, config_dir

from .errors import PipelineConfigError

STAGES: tuple[str, ...] = ("seeds", "skillgen", "dataset", "train", "eval", "report")
SEED_SOURCES: tuple[str, ...] = ("scripted", "path")
LIBRARY_SECTIONS: tuple[str, ...] = ("skillgen", "dataset", "train", "eval")


@dataclass(frozen=True)
class SeedsSection:
    """``source``: ``scripted`` (the twin's scripted expert records ``count`` seeds, scene seeds ``seed`` …
    ``seed + count - 1``, at ``real_time_factor``× real time, ``max_steps`` per episode (0: task.yaml's); the
    recorder waits ``service_timeout_s`` for the sim's services) or ``path`` (recorded seed files in ``path``)."""

    source: str = "scripted"
    path: str = ""
    count: int = 5
    seed: int = 0
    real_time_factor: float = 3.0
    max_steps: int = 0
    service_timeout_s: float = 60.0


@dataclass(frozen=True)
class LibrarySection:
    """A stage library's config: base file (``config``, resolved), its overrides (``set``), the merged
    mapping (``merged``), the parsed object (``parsed``, None until resolved) and ``workers`` (skillgen only:
    the generation executor's processes; the dataset section has its own ``workers``)."""

    config: str
    file: str
    overrides: dict[str, Any]
    merged: dict[str, Any]
    workers: int = 1
    parsed: Any = None


@dataclass(frozen=True)
class TrackingSection:
    """MLflow: ``mlflow`` on/off; ``uri`` ("" = sqlite under the output directory); ``experiment`` name."""

    mlflow: bool = True
    uri: str = ""
    experiment: str = "so101_pipeline"


@dataclass(frozen=True)
class PipelineConfig:
    """The whole pipeline. ``out``: default output directory; ``file``: where it was read from; ``threads``:
    CPU threads of OpenMP/MKL (torch) and llvmpipe (software OpenGL) in every stage process (0 = their
    default, one per core; 1 on a small shared CPU, where spinning worker threads cost 2-10x); ``dr_profile``:
    the scene distribution (dr.yaml profile, "" = its base ranges) that SkillGen generates the demos in and the
    evaluation draws its episodes from: one setting, so a policy is never scored on scenes it was not trained
    for."""

    file: str
    out: str
    seeds: SeedsSection
    tracking: TrackingSection
    libraries: dict[str, LibrarySection] = field(default_factory=dict)
    threads: int = 0
    dr_profile: str = ""
    overrides: tuple[str, ...] = ()  # the ``a.b.c=value`` settings applied over the file (``--set``)

    def section(self, stage: str) -> Any:
        """What enters ``stage``'s fingerprint (its settings, as parsed)."""
        if stage == "seeds":
            return self.seeds
        if stage in self.libraries:
            lib = self.libraries[stage]
            settings = {"config": lib.parsed if lib.parsed is not None else lib.merged, "workers": lib.workers}
            return settings | {"dr_profile": self.dr_profile} if stage == "skillgen" else settings
        return None


Parser = Callable[[Mapping[str, Any]], Any]
"""A stage library's config parser: the section's mapping → its config object (raises the project's
:class:`~so101_core.config.ConfigError`, ``field`` naming the dotted field)."""


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` applied; nested mappings merge, anything else replaces."""
    out = copy.deepcopy(dict(base))
    for k, v in overrides.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _has(mapping: Mapping[str, Any], dotted: list[str]) -> bool:
    cur: Any = mapping
    for part in dotted:
        key = part.split("[", 1)[0]
        if not isinstance(cur, Mapping) or key not in cur:
            return False
        cur = cur[key]
    return True


def _read_yaml(path: Path, file: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PipelineConfigError("pipeline", f"cannot read: {exc.strerror or exc}", file=file) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise PipelineConfigError("pipeline", f"not valid YAML{where}: {problem}", file=file) from None


def _flag(f: Fields, key: str, default: bool) -> bool:
    v = f.raw(key, default)
    if not isinstance(v, bool):
        raise ConfigError(f.field(key), f"expected true/false, got {v!r}")
    return v


def _mapping(f: Fields, key: str) -> dict[str, Any]:
    v = f.raw(key, {})
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ConfigError(f.field(key), f"expected a mapping of overrides, got {v!r}")
    return dict(v)


def _library(f: Fields, name: str, cfg_dir: Path) -> LibrarySection:
    s = f.sub(name, {})
    base = s.text("config", f"{name}.yaml")
    workers = s.integer("workers", 1, lo=1, hi=4096) if name == "skillgen" else 1
    overrides = _mapping(s, "set")
    s.finish()
    path = Path(base) if Path(base).is_absolute() else cfg_dir / base
    data: Any = {}
    if path.is_file():
        data = _read_yaml(path, str(path)) or {}
        if not isinstance(data, Mapping):
            raise PipelineConfigError(name, f"expected a mapping, got {type(data).__name__}", file=str(path))
    elif base != f"{name}.yaml":  # an explicitly named file must exist; the default may be absent
        raise ConfigError(s.field("config"), f"no such file: {path}")
    return LibrarySection(base, str(path), overrides, deep_merge(data, overrides), workers)


def parse_pipeline(data: Any, file: str, cfg_dir: Path | None = None) -> PipelineConfig:
    """Validate an already-parsed ``pipeline.yaml`` mapping (``file`` for error messages)."""
    cfg_dir = cfg_dir or config_dir()
    try:
        f = Fields(data if data is not None else {}, "pipeline", error=PipelineConfigError)
        out = f.text("out", "out/pipeline")
        threads = f.integer("threads", 0, lo=0, hi=1024)
        dr_profile = f.text("dr_profile", "")
        s = f.sub("seeds", {})
        d = SeedsSection()
        seeds = SeedsSection(
            source=s.text("source", d.source, choices=SEED_SOURCES),
            path=s.text("path", d.path),
            count=s.integer("count", d.count, lo=1, hi=100_000),
            seed=s.integer("seed", d.seed, lo=0, hi=2**31 - 1),
            real_time_factor=s.num("real_time_factor", d.real_time_factor, lo=0.1, hi=100.0),
            max_steps=s.integer("max_steps", d.max_steps, lo=0, hi=10_000_000),
            service_timeout_s=s.num("service_timeout_s", d.service_timeout_s, lo=1.0, hi=3600.0),
        )
        if seeds.source == "path" and not seeds.path:
            raise ConfigError(s.field("path"), "required with source: path (a directory of seed files)")
        s.finish()
        t = f.sub("tracking", {})
        dt = TrackingSection()
        tracking = TrackingSection(
            mlflow=_flag(t, "mlflow", dt.mlflow),
            uri=t.text("uri", dt.uri),
            experiment=t.text("experiment", dt.experiment),
        )
        if not tracking.experiment:
            raise ConfigError(t.field("experiment"), "must not be empty")
        t.finish()
        libraries = {name: _library(f, name, cfg_dir) for name in LIBRARY_SECTIONS}
        f.sub("report", {}).finish()
        f.finish()
    except ConfigError as exc:
        raise PipelineConfigError(exc.field, exc.message, file=file) from None
    return PipelineConfig(file=file, out=out, seeds=seeds, tracking=tracking, libraries=libraries, threads=threads,
                          dr_profile=dr_profile)  # fmt: skip


def load_pipeline_config(path: str | Path | None = None, sets: Sequence[str] = ()) -> PipelineConfig:
    """Read and validate ``path`` (default ``config/pipeline.yaml``) with ``sets`` applied over it (``a.b.c=value``,
    the value as YAML: ``skillgen.set.num_demos=900``); the file's own checks apply, so a misspelt key fails. Library
    sections are not parsed yet: see :func:`resolve_section`."""
    p = Path(path) if path is not None else config_dir() / "pipeline.yaml"
    data = _read_yaml(p, str(p))
    for item in sets:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or "" in key.strip().split("."):
            raise PipelineConfigError("--set", f"expects a.b.c=value, got {item!r}", file=str(p))
        try:
            value: Any = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise PipelineConfigError("--set", f"{item!r}: the value is not YAML ({exc})", file=str(p)) from None
        for part in reversed(key.strip().split(".")):
            value = {part: value}
        data = deep_merge(data if isinstance(data, Mapping) else {}, value)
    return dataclasses.replace(parse_pipeline(data, str(p), None), overrides=tuple(sets))


def resolve_section(cfg: PipelineConfig, name: str, parser: Parser, root: str) -> PipelineConfig:
    """``cfg`` with section ``name`` validated by its library's own ``parser`` (the merged mapping → its config;
    its errors name fields starting with ``root``, e.g. ``skillgen.num_demos``); an error is re-raised naming the
    file and field the value came from: ``pipeline.<name>.set.<field>`` in the pipeline file for an override,
    else the field in the library's base file."""
    lib = cfg.libraries[name]
    try:
        parsed = parser(lib.merged)
    except ConfigError as exc:
        fld = exc.field or root
        rest = fld.removeprefix(root).lstrip(".")
        if rest and _has(lib.overrides, rest.split(".")):
            raise PipelineConfigError(f"pipeline.{name}.set.{rest}", exc.message, file=cfg.file) from None
        raise PipelineConfigError(fld, exc.message, file=lib.file) from None
    libraries = dict(cfg.libraries)
    libraries[name] = LibrarySection(lib.config, lib.file, lib.overrides, lib.merged, lib.workers, parsed)
    return dataclasses.replace(cfg, libraries=libraries)
