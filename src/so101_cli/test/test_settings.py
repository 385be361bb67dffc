"""``--set field=value`` on the CLI's config-taking verbs: values parsed as YAML and validated as the file is."""

from __future__ import annotations

from pathlib import Path

import pytest
from so101_cli.policy_cmd import with_settings
from so101_policy.config import EvalConfig
from so101_policy.errors import ConfigError


def test_settings_override_and_are_validated() -> None:
    cfg = with_settings(EvalConfig(), ["graphs=4", "dr_profile=wide", "cameras=[top, side]", "blend_alpha=0.5"], "eval")
    assert (cfg.graphs, cfg.dr_profile, cfg.cameras, cfg.blend_alpha) == (4, "wide", ("top", "side"), 0.5)
    assert with_settings(cfg, [], "eval") is cfg
    with pytest.raises(ConfigError, match="graphs"):
        with_settings(EvalConfig(), ["graphs=0"], "eval")
    with pytest.raises(ConfigError, match=r"eval\.nope"):
        with_settings(EvalConfig(), ["nope=1"], "eval")


def test_the_temporal_ensemble_is_set_for_both_evaluators() -> None:
    """``so101 eval --set temporal_ensemble_coeff=...``: the EvalConfig both evaluators read (the fast one directly,
    the graph's policy node through its launch argument)."""
    from so101_policy.evaluation_graph import evaluation_arguments

    cfg = with_settings(EvalConfig(), ["temporal_ensemble_coeff=0.01"], "eval")
    assert cfg.temporal_ensemble_coeff == 0.01
    arguments = evaluation_arguments(
        cfg, cameras=("top",), policy_cameras=("top",), width=32, height=24, server_port=6001, token="t0"
    )
    assert "temporal_ensemble_coeff:=0.01" in arguments
    with pytest.raises(ConfigError, match=r"eval\.temporal_ensemble_coeff"):
        with_settings(EvalConfig(), ["temporal_ensemble_coeff=-1"], "eval")
    with pytest.raises(ConfigError, match="field=value"):
        with_settings(EvalConfig(), ["graphs"], "eval")


def test_train_policy_flag_sets_the_policy_type_and_is_validated(tmp_path: Path) -> None:
    from so101_cli.main import app
    from typer.testing import CliRunner

    config = tmp_path / "train.yaml"
    config.write_text("chunk_size: 12\n")  # fine for ACT; Diffusion Policy's UNet needs a multiple of 8 here
    args = ["train", "--dataset", str(tmp_path), "--config", str(config), "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(app, [*args, "--policy", "diffusion"])
    assert result.exit_code == 2 and "train.chunk_size: (12) must be a multiple of" in result.output, result.output
    result = CliRunner().invoke(app, [*args, "--policy", "vqbet"])
    assert result.exit_code == 2 and "train.policy: must be one of" in result.output, result.output


def test_pipeline_settings_reach_the_plan_and_a_bad_one_exits_2(tmp_path: Path) -> None:
    """``so101 pipeline plan --set``: a setting over the file is taken (that it changes what re-runs:
    test_pipeline_config); a misspelt one is the file's error (exit 2, naming the field), not a run."""
    from so101_cli.main import app
    from typer.testing import CliRunner

    config = tmp_path / "pipeline.yaml"
    config.write_text("skillgen:\n  set: {num_demos: 3}\n")
    args = ["pipeline", "plan", "--config", str(config), "--out", str(tmp_path / "out"), "--until", "skillgen"]
    result = CliRunner().invoke(app, [*args, "--set", "skillgen.set.num_demos=4"])
    assert result.exit_code == 0 and "skillgen  run (upstream re-runs: seeds)" in result.output, result.output
    result = CliRunner().invoke(app, [*args, "--set", "skillgen.set.num_demoz=4"])
    assert result.exit_code == 2 and "num_demoz" in result.output, result.output
