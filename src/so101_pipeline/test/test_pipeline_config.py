"""pipeline.yaml validation: every error names the file and the dotted field."""

from __future__ import annotations

from pathlib import Path

import pytest
from so101_core.config import config_dir
from so101_pipeline.config import load_pipeline_config, resolve_section
from so101_pipeline.errors import PipelineConfigError
from so101_pipeline.pipeline import resolve_config
from so101_skillgen.config import parse_skillgen_config


def _write(tmp_path: Path, text: str, name: str = "pipeline.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("seeds: {count: 0}\n", "pipeline.seeds.count", "must be >= 1"),
        ("seeds: {count: five}\n", "pipeline.seeds.count", "expected an integer"),
        ("seeds: {cont: 5}\n", "pipeline.seeds.cont", "unknown field"),
        ("seeds: {source: usb}\n", "pipeline.seeds.source", "must be one of"),
        ("seeds: {source: path}\n", "pipeline.seeds.path", "required with source: path"),
        ("tracking: {mlflow: yes please}\n", "pipeline.tracking.mlflow", "expected true/false"),
        ("train: {set: [1, 2]}\n", "pipeline.train.set", "expected a mapping"),
        ("train: {config: nope.yaml}\n", "pipeline.train.config", "no such file"),
        ("trian: {}\n", "pipeline.trian", "unknown field"),
        ("[1, 2]\n", "pipeline", "expected a mapping"),
        ("threads: -1\n", "pipeline.threads", "must be >= 0"),
    ],
)
def test_bad_values_name_file_and_field(tmp_path: Path, text: str, field: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PipelineConfigError, match=message) as info:
        load_pipeline_config(path)
    assert info.value.file == str(path) and info.value.field == field
    assert str(info.value).startswith(f"{path}: {field}: ")


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "seeds:\n  count: 5\n   seed: [0\n")
    with pytest.raises(PipelineConfigError, match=r"not valid YAML \(line 3") as info:
        load_pipeline_config(path)
    assert info.value.file == str(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PipelineConfigError, match="cannot read"):
        load_pipeline_config(tmp_path / "absent.yaml")


def test_library_override_errors_name_the_pipeline_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "skillgen:\n  set: {num_demos: 0}\n")
    cfg = load_pipeline_config(path)
    with pytest.raises(PipelineConfigError, match="must be >= 1") as info:
        resolve_section(cfg, "skillgen", parse_skillgen_config, "skillgen")
    assert (info.value.file, info.value.field) == (str(path), "pipeline.skillgen.set.num_demos")
    nested = _write(tmp_path, "skillgen:\n  set: {smoothing: {window: 20}}\n", "nested.yaml")
    with pytest.raises(PipelineConfigError, match="must be odd") as info:
        resolve_section(load_pipeline_config(nested), "skillgen", parse_skillgen_config, "skillgen")
    assert info.value.field == "pipeline.skillgen.set.smoothing.window"


def test_library_base_file_errors_name_that_file(tmp_path: Path) -> None:
    base = _write(tmp_path, "num_trials: -3\n", "my_skillgen.yaml")
    path = _write(tmp_path, f"skillgen:\n  config: {base}\n  set: {{num_demos: 4}}\n")
    cfg = load_pipeline_config(path)
    assert cfg.libraries["skillgen"].merged["num_demos"] == 4
    with pytest.raises(PipelineConfigError) as info:
        resolve_section(cfg, "skillgen", parse_skillgen_config, "skillgen")
    assert (info.value.file, info.value.field) == (str(base), "skillgen.num_trials")


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("train:\n  set: {lr_schedule: linear}\n", "pipeline.train.set.lr_schedule", "must be one of"),
        ("train:\n  set: {batch_size: 0}\n", "pipeline.train.set.batch_size", "must be > 0"),
        ("train:\n  set: {batch_sise: 8}\n", "pipeline.train.set.batch_sise", "unknown field"),
        ("eval:\n  set: {blend_alpha: 0}\n", "pipeline.eval.set.blend_alpha", "must be in"),
        ("dataset:\n  set: {video: {crf: 99}}\n", "pipeline.dataset.set.video.crf", "must be <= 63"),
        ("dataset:\n  set: {render: {gl: vulkan}}\n", "pipeline.dataset.set.render.gl", "must be one of"),
    ],
)
def test_every_librarys_override_errors_name_the_pipeline_field(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    """Each stage library's parser takes the merged mapping and names the field; the pipeline maps it to the
    override that set it (no detour through a temporary file, no parsing of the message)."""
    path = _write(tmp_path, text)
    with pytest.raises(PipelineConfigError, match=message) as info:
        resolve_config(load_pipeline_config(path), ["skillgen", "dataset", "train", "eval"])
    assert (info.value.file, info.value.field) == (str(path), field)
    assert info.value.message.startswith(message)  # "<field>: <problem>", the field not repeated


def test_a_train_base_file_error_names_that_file_and_field(tmp_path: Path) -> None:
    base = _write(tmp_path, "warmup_steps: 500\nsteps: 100\n", "my_train.yaml")
    path = _write(tmp_path, f"train:\n  config: {base}\n")
    with pytest.raises(PipelineConfigError, match=r"must be in \[0, steps\)") as info:
        resolve_config(load_pipeline_config(path), ["train"])
    assert (info.value.file, info.value.field) == (str(base), "train.warmup_steps")


@pytest.mark.parametrize("name", ["pipeline.yaml", "pipeline_h200.yaml"])
def test_shipped_configs_load(name: str) -> None:
    cfg = resolve_config(load_pipeline_config(config_dir() / name), ["skillgen"])
    assert cfg.seeds.count == 5 and cfg.libraries["skillgen"].parsed.num_demos >= 20


def test_one_scene_distribution_for_the_demos_and_the_evaluation(tmp_path: Path) -> None:
    """pipeline.dr_profile is the evaluation's profile and enters SkillGen's fingerprint; an evaluation section
    that names another profile, or a profile dr.yaml lacks, is an error naming the field."""
    cfg = resolve_config(load_pipeline_config(_write(tmp_path, "dr_profile: wide\n")), ["skillgen", "eval"])
    assert cfg.libraries["eval"].parsed.dr_profile == "wide"
    assert cfg.section("skillgen")["dr_profile"] == "wide" and "dr_profile" not in cfg.section("dataset")
    base = resolve_config(load_pipeline_config(_write(tmp_path, "threads: 1\n", "base.yaml")), ["eval"])
    assert base.libraries["eval"].parsed.dr_profile == "" and base.section("skillgen")["dr_profile"] == ""
    path = _write(tmp_path, "dr_profile: wide\neval:\n  set: {dr_profile: ''}\n", "same.yaml")
    assert resolve_config(load_pipeline_config(path), ["eval"]).libraries["eval"].parsed.dr_profile == "wide"
    path = _write(tmp_path, "eval:\n  set: {dr_profile: wide}\n", "split.yaml")
    with pytest.raises(PipelineConfigError, match=r"set the scene distribution once, at pipeline\.dr_profile") as info:
        resolve_config(load_pipeline_config(path), ["eval"])
    assert (info.value.file, info.value.field) == (str(path), "pipeline.eval.set.dr_profile")
    path = _write(tmp_path, "dr_profile: narrowest\n", "unknown.yaml")
    for stages in (["eval"], ["skillgen"]):  # either stage that draws scenes names the unknown profile up front
        with pytest.raises(PipelineConfigError, match="narrowest") as info:
            resolve_config(load_pipeline_config(path), stages)
        assert info.value.field == "pipeline.dr_profile"


def test_settings_over_the_file_merge_into_it_and_are_checked_as_it_is(tmp_path: Path) -> None:
    """``--set a.b.c=value``: the value as YAML, merged into the file's mapping (siblings kept), recorded in the
    config; a misspelt key or a bad value fails as in the file, and an item without ``=`` names ``--set``."""
    path = _write(tmp_path, "skillgen:\n  set: {num_demos: 30, rollout: {execution_noise_rad: 0.02}}\n")
    sets = ["skillgen.set.rollout.execution_noise_rad=0.04", "threads=1"]
    cfg = resolve_config(load_pipeline_config(path, sets), ["skillgen"])
    generation = cfg.libraries["skillgen"].parsed
    assert generation.rollout.execution_noise_rad == 0.04 and generation.num_demos == 30 and cfg.threads == 1
    assert cfg.overrides == tuple(sets) and load_pipeline_config(path).overrides == ()
    plain = resolve_config(load_pipeline_config(path), ["skillgen"])
    assert cfg.section("skillgen") != plain.section("skillgen")  # the stage re-runs under another setting
    with pytest.raises(PipelineConfigError, match="thread") as info:
        load_pipeline_config(path, ["thread=1"])
    assert info.value.file == str(path)
    with pytest.raises(PipelineConfigError, match="must be >= 1"):
        resolve_config(load_pipeline_config(path, ["skillgen.set.num_demos=0"]), ["skillgen"])
    with pytest.raises(PipelineConfigError, match="the value is not YAML") as info:
        load_pipeline_config(path, ["skillgen.set.num_demos=[1,"])
    assert info.value.field == "--set"
    for bad in ("threads", "=1", "skillgen..num_demos=3"):
        with pytest.raises(PipelineConfigError, match=r"expects a\.b\.c=value") as info:
            load_pipeline_config(path, [bad])
        assert info.value.field == "--set"
