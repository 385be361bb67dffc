"""``--set field=value`` on the CLI's config-taking verbs: values parsed as YAML and validated as the file is."""

from __future__ import annotations

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
    with pytest.raises(ConfigError, match="field=value"):
        with_settings(EvalConfig(), ["graphs"], "eval")
