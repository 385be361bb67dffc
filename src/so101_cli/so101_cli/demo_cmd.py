"""``so101 demo``: the main job. The whole pipeline with the small profile (``config/pipeline.yaml``): scripted
seeds in the MuJoCo twin over a zenoh graph → SkillGen → render + LeRobot v3.0/v2.1 + bags → ACT training →
evaluation in the twin → report, then the summary and the HTML report's path. Small on purpose (it proves the
plumbing on a 2-core CPU machine, not the policy); a second run skips every stage that is unchanged."""

from __future__ import annotations

from pathlib import Path

import typer


def demo(
    config: Path | None = typer.Option(None, "--config", help="pipeline YAML (default config/pipeline.yaml)"),
    out: str = typer.Option("", "--out", help="output directory (default: the config's, out/pipeline)"),
) -> None:
    """Run the main job: the whole pipeline, small (the same as `so101 pipeline run`)."""
    from so101_pipeline.pipeline import RunOptions

    from so101_cli.pipeline_cmd import run_and_print

    run_and_print(config, RunOptions(out=out))
