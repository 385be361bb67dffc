"""``so101 train --sweep``: runs trained side by side (each its own process and run directory), then scored by the
fast evaluator and ranked; a bad sweep file names the run and the field."""

from __future__ import annotations

import dataclasses
import json
import time
import types
from pathlib import Path

import pytest
import yaml
from so101_policy.config import EvalConfig, TrainConfig
from so101_policy.errors import ConfigError
from so101_policy.sweep import load_sweep, run_sweep
from so101_policy.testing.dataset import make_dataset

from so101_policy import sweep as sweep_module

pytestmark = pytest.mark.slow

BASE = TrainConfig(
    steps=4, batch_size=2, num_workers=0, chunk_size=4, save_freq=4, log_freq=2, device="cpu", system_metrics=False,
    log_checkpoints=False, cameras=("top",),
)  # fmt: skip
EVAL = EvalConfig(episodes=1, episode_s=0.3, randomize=False, device="cpu", videos=0)
TINY_ACT = "dim_model: 16, dim_feedforward: 32, n_heads: 2, n_encoder_layers: 1, latent_dim: 4"
TINY_DP = (
    "diffusion_down_dims: [16, 32], diffusion_keypoints: 4, diffusion_train_timesteps: 10, diffusion_inference_steps: 2"
)


def test_runs_train_side_by_side_and_are_ranked_by_the_fast_evaluator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ACT and a Diffusion Policy run side by side: trained, then scored (in a later slice when this one has no
    time left), each checkpoint of its own type."""
    dataset = make_dataset(tmp_path / "ds", episodes=1, frames=12)
    spec = tmp_path / "sweep.yaml"
    spec.write_text(
        f"runs:\n  act: {{backbone_norm: batch, lr: 0.001, {TINY_ACT}}}\n"
        f"  diffusion: {{policy: diffusion, {TINY_DP}}}\n"
    )
    sweep = load_sweep(spec, dataclasses.replace(BASE, time_limit_s=600.0), EVAL)
    assert sweep.runs["act"] == dataclasses.replace(
        BASE, backbone_norm="batch", lr=0.001, time_limit_s=600.0, dim_model=16, dim_feedforward=32, n_heads=2,
        n_encoder_layers=1, latent_dim=4,
    )  # fmt: skip
    assert (sweep.runs["act"].policy, sweep.runs["diffusion"].policy) == ("act", "diffusion")
    # a slice with no time left for scoring: trained, not scored, and said so
    monkeypatch.setattr(sweep_module, "SCORE_RESERVE_S", 1e6)
    assert run_sweep(sweep, dataset, tmp_path / "out", envs=1) == []
    partial = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert partial["complete"] is False and partial["stage"] == "scoring"
    assert partial["steps"] == {"act": 4, "diffusion": 4} and partial["train_wall_s"] > 0
    assert not (tmp_path / "out" / "act" / "fast_eval").exists()
    logs = {name: (tmp_path / "out" / name / "train.log").stat().st_size for name in ("act", "diffusion")}
    # a call whose slice ends once scoring has begun (the evaluator's clock past the deadline): no episode starts,
    # nothing counts as scored
    monkeypatch.undo()
    from so101_policy import fast_eval

    late = types.SimpleNamespace(perf_counter=time.perf_counter, monotonic=lambda: time.monotonic() + 1e6)
    monkeypatch.setattr(fast_eval, "time", late)
    assert run_sweep(sweep, dataset, tmp_path / "out", envs=1) == []
    assert json.loads((tmp_path / "out" / "sweep.json").read_text())["stage"] == "scoring"
    assert not list((tmp_path / "out").glob("*/fast_eval/fast_results.json"))
    # the next call scores without training again
    monkeypatch.undo()
    rows = run_sweep(sweep, dataset, tmp_path / "out", envs=1)
    assert {name: (tmp_path / "out" / name / "train.log").stat().st_size for name in logs} == logs
    wall = json.loads((tmp_path / "out" / "sweep.json").read_text())["train_wall_s"]
    assert wall == pytest.approx(partial["train_wall_s"], abs=1.0)  # the earlier call's training, nothing more
    assert {r["run"] for r in rows} == {"act", "diffusion"}
    for row in rows:
        assert row["steps"] == 4 and row["episodes"] == 1 and 0.0 <= row["success_rate"] <= 1.0
        assert row["samples_per_s"] > 0 and row["train_episodes"] == 1  # the dataset's episodes it trained on
        config = tmp_path / "out" / row["run"] / "checkpoints" / "last" / "pretrained_model" / "config.json"
        assert json.loads(config.read_text())["type"] == row["run"]
        assert (tmp_path / "out" / row["run"] / "fast_eval" / "fast_results.json").is_file()
    assert json.loads((tmp_path / "out" / "sweep.json").read_text())["runs"] == rows
    assert "paired_with_best" not in rows[0]  # the others are paired with the best, on their common scene
    assert rows[1]["paired_with_best"]["same_scenes"] == 1
    changes = {r["run"]: r["changes"] for r in rows}
    assert changes["act"] == {"backbone_norm": "batch", "lr": 0.001, "dim_model": 16, "dim_feedforward": 32,
                              "n_heads": 2, "n_encoder_layers": 1, "latent_dim": 4}  # fmt: skip
    assert changes["diffusion"]["policy"] == "diffusion"


def test_at_once_trains_one_run_after_the_other_and_only_with_time_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``at_once: 1``: the second run starts once the first has ended, limited to what is left of the slice; with
    less than RUN_RESERVE_S left it does not start, and the sweep says so (the first run always starts)."""
    dataset = make_dataset(tmp_path / "ds", episodes=1, frames=12)
    spec = tmp_path / "sweep.yaml"
    spec.write_text(f"at_once: 1\nruns:\n  first: {{{TINY_ACT}}}\n  second: {{lr: 0.001, {TINY_ACT}}}\n")
    sweep = load_sweep(spec, dataclasses.replace(BASE, time_limit_s=600.0), EVAL)
    assert sweep.at_once == 1
    monkeypatch.setattr(sweep_module, "SCORE_RESERVE_S", 1e6)  # trained in these calls, not scored
    monkeypatch.setattr(sweep_module, "RUN_RESERVE_S", 1e6)  # no time for a run that has to wait
    short = tmp_path / "short"
    assert run_sweep(sweep, dataset, short, envs=1) == []
    partial = json.loads((short / "sweep.json").read_text())
    assert partial == {**partial, "complete": False, "stage": "training", "steps": {"first": 4, "second": 0}}
    assert not (short / "second").exists()
    # the next call scores the run trained earlier before it trains the other (a slice ending during that
    # training still leaves the first run's score), then trains and scores the other
    monkeypatch.setattr(sweep_module, "SCORE_RESERVE_S", 180.0)
    assert sorted(row["run"] for row in run_sweep(sweep, dataset, short, envs=1)) == ["first", "second"]
    first_scored = (short / "first" / "fast_eval" / "fast_results.json").stat().st_mtime
    assert first_scored <= (short / "second" / "train.yaml").stat().st_mtime
    monkeypatch.setattr(sweep_module, "SCORE_RESERVE_S", 1e6)
    monkeypatch.setattr(sweep_module, "RUN_RESERVE_S", 120.0)
    out = tmp_path / "out"
    assert run_sweep(sweep, dataset, out, envs=1) == []
    assert json.loads((out / "sweep.json").read_text())["steps"] == {"first": 4, "second": 4}
    # the second run's config was written as it started: after the first run's result, written as it ended
    assert (out / "first" / "train_result.json").stat().st_mtime <= (out / "second" / "train.yaml").stat().st_mtime
    limits = [yaml.safe_load((out / n / "train.yaml").read_text())["time_limit_s"] for n in ("first", "second")]
    assert 0 < limits[1] < limits[0] <= 600.0  # what the slice had left when each started


def test_bad_sweep_files_name_the_problem(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.yaml"
    for text, match in (
        ("runs: {}\n", "at least one run"),
        ("runs:\n  a: {batch_size: 0}\n", "batch_size"),
        ("runs:\n  a: {nope: 1}\n", "sweep.runs.a"),
        ("other: 1\n", "expected the keys runs"),
        ("base: 3\nruns:\n  a: {}\n", "base: must be a mapping"),
        ("at_once: -1\nruns:\n  a: {}\n", "at_once: must be an integer >= 0"),
    ):
        spec.write_text(text)
        with pytest.raises(ConfigError, match=match):
            load_sweep(spec, BASE, EVAL)


def test_a_field_of_the_other_policy_is_named(tmp_path: Path) -> None:
    """A field of ACT's shared by a diffusion run is a mistake, named."""
    spec = tmp_path / "sweep.yaml"
    spec.write_text("base: {dim_model: 16}\nruns:\n  diffusion: {policy: diffusion}\n")
    with pytest.raises(ConfigError, match=r"train\.dim_model: shapes ACT only"):
        load_sweep(spec, TrainConfig(), EVAL)


def test_a_run_may_train_on_the_first_episodes(tmp_path: Path) -> None:
    """Data sizes in one sweep: a run sets max_episodes, the others train on every episode."""
    spec = tmp_path / "sweep.yaml"
    spec.write_text("runs:\n  demos600: {max_episodes: 600}\n  all: {}\n")
    sweep = load_sweep(spec, BASE, EVAL)
    assert (sweep.runs["demos600"].max_episodes, sweep.runs["all"].max_episodes) == (600, 0)
    assert sweep.changes["demos600"] == {"max_episodes": 600}
    spec.write_text("runs:\n  a: {max_episodes: -1}\n")
    with pytest.raises(ConfigError, match=r"train.max_episodes: must be >= 0"):
        load_sweep(spec, BASE, EVAL)


SHIPPED_SWEEPS = sorted((Path(__file__).resolve().parents[3] / "bench" / "gpu").glob("policy_*.yaml"))


@pytest.mark.parametrize("path", SHIPPED_SWEEPS, ids=lambda p: p.name)
def test_every_shipped_sweep_file_parses(path: Path) -> None:
    """The GPU machine's sweep files (bench/gpu/policy_*.yaml) read over today's train.yaml and eval.yaml: a field
    renamed in the code, or misspelt in a file, fails here rather than in a device call's first minute."""
    from so101_policy.config import load_eval_config, load_train_config

    sweep = load_sweep(path, load_train_config(), load_eval_config())
    assert sweep.runs and all(name in sweep.changes for name in sweep.runs)


def test_the_shipped_sweep_files_are_found() -> None:
    names = {p.name for p in SHIPPED_SWEEPS}
    assert {
        "policy_sweep.yaml",
        "policy_recipe_aux.yaml",
        "policy_recipe_aux3.yaml",
        "policy_recipe_data.yaml",
        "policy_recipe_data1800.yaml",
    } <= names
