"""``so101 pipeline run | plan``: the whole pipeline (seeds → SkillGen → dataset → train → eval → report) as
one resumable command; stages whose inputs and config are unchanged are skipped (``so101_pipeline``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from so101_pipeline.pipeline import RunOptions

app = typer.Typer(help="The whole pipeline as one resumable command.", no_args_is_help=True)

CONFIG_HELP = "pipeline YAML (default config/pipeline.yaml)"
SETS = typer.Option(
    [], "--set", help="a.b.c=value (YAML value) over the pipeline file, e.g. --set skillgen.set.num_demos=900"
)
SLICE_ENDED_EXIT = 75
"""Exit status of an invocation whose slice ended before the pipeline finished (EX_TEMPFAIL: run it again)."""


@app.callback()
def _group() -> None:
    """The whole pipeline as one resumable command (keeps ``run`` a sub-command)."""


def stage_state(stage: dict[str, Any]) -> str:
    """What one invocation did with a stage of ``summary.json``: ran, resumed or skipped."""
    return "skipped" if stage["skipped"] else "resumed" if stage["resumed"] else "ran"


def print_summary(summary: dict[str, Any], console: Console) -> None:
    """The stage table and the headline figures of a ``summary.json``."""
    table = Table(title=f"pipeline → {summary['outputs']['root']}")
    for column in ("stage", "this run", "why", "wall [s]", "produced in [s]"):
        table.add_column(column, justify="right" if "[s]" in column else "left")
    for name, st in summary["stages"].items():
        table.add_row(name, stage_state(st), st["reason"], f"{st['wall_s']:.1f}", f"{st['produced_wall_s']:.1f}")
    console.print(table)
    if summary.get("demos") is not None:
        lo, hi = summary["yield_wilson"]
        console.print(
            f"seeds {summary['seeds']} → demos {summary['demos']} of {summary['attempts']} attempts "
            f"(yield {summary['yield']:.0%}, 95 % CI {lo:.0%}–{hi:.0%})"
        )
    if summary.get("frames") is not None:
        console.print(f"dataset: {summary['dataset_episodes']} episodes, {summary['frames']} frames")
    if summary.get("train_steps") is not None:
        console.print(f"training: {summary['train_steps']} steps, final loss {summary['final_loss']:.4g}")
    if summary.get("success_rate") is not None:
        console.print(
            f"[bold]sim success {summary['success_rate']:.0%}[/bold] ({summary['successes']}/{summary['episodes']}, "
            f"95 % Wilson {summary['wilson_low']:.0%}–{summary['wilson_high']:.0%})"
        )
    if summary.get("workshop_success_rate") is not None:
        lo, hi = summary["workshop_wilson"]
        console.print(
            f"workshop rule {summary['workshop_success_rate']:.0%} ({summary['workshop_successes']}/"
            f"{summary['episodes']}, 95 % Wilson {lo:.0%}–{hi:.0%})"
        )
    summary_path = Path(summary["outputs"]["root"]) / "summary.json"
    console.print(f"wall time {summary['wall_s']:.1f} s; summary: {summary_path}", soft_wrap=True)  # paths unbroken
    if summary.get("report_html"):
        console.print(f"[bold]report:[/bold] {summary['report_html']}", soft_wrap=True)


@app.command()
def run(
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    out: str = typer.Option("", "--out", help="output directory (default: the config's `out`)"),
    address: str = typer.Option(
        "", "--address", help="run generation on Ray: local (a Ray started here), auto or ray://HOST:10001"
    ),
    until: str = typer.Option("report", "--until", help="last stage: seeds, skillgen, dataset, train, eval"),
    slice_s: float = typer.Option(
        0.0, "--slice-s", envvar="SO101_SLICE_S", min=0, help="s this call may take (a time-limited job; 0 = none)"
    ),
    sets: list[str] = SETS,
) -> None:
    """Run the pipeline; unchanged stages are skipped, interrupted ones resumed. Writes summary.json. With
    ``--slice-s`` the call stops in time, resumably, and exits with 75 until the pipeline has finished: run the
    same command again (with the same ``--set``s: a changed setting re-runs the stages it reaches)."""
    from so101_pipeline.pipeline import RunOptions

    run_and_print(config, RunOptions(out=out, until=until, address=address, slice_s=slice_s), sets)


def run_and_print(config: Path | None, options: RunOptions, sets: list[str] | None = None) -> None:
    """``so101 pipeline run``'s work for any caller (``so101 demo`` too): run ``config`` with ``sets`` over it, print
    the summary, exit with 1 (a stage failed), 2 (a bad config) or 75 (the slice ended)."""
    from so101_pipeline.config import load_pipeline_config
    from so101_pipeline.errors import PipelineError
    from so101_pipeline.pipeline import run_pipeline
    from so101_pipeline.progress import RichReporter

    console = Console()
    try:
        with RichReporter() as reporter:
            summary = run_pipeline(load_pipeline_config(config, sets or ()), options, reporter=reporter)
    except (PipelineError, ValueError) as exc:
        console.print(f"[red]so101 pipeline:[/red] {exc}")
        raise typer.Exit(2 if isinstance(exc, ValueError) else 1) from None
    print_summary(summary, console)
    if not summary["complete"]:
        console.print(
            f"[bold]slice ended[/bold] in stage {summary['slice_ended']} (slice {summary['slices']}): "
            "run the same command again to go on"
        )
        raise typer.Exit(SLICE_ENDED_EXIT)


@app.command()
def plan(
    config: Path | None = typer.Option(None, "--config", help=CONFIG_HELP),
    out: str = typer.Option("", "--out", help="output directory (default: the config's `out`)"),
    until: str = typer.Option("report", "--until", help="last stage"),
    sets: list[str] = SETS,
) -> None:
    """Which stages a run would skip, and why the others would run (runs nothing)."""
    from so101_pipeline.config import load_pipeline_config
    from so101_pipeline.errors import PipelineError
    from so101_pipeline.pipeline import plan_pipeline

    try:
        steps = plan_pipeline(load_pipeline_config(config, sets), out, until)
    except (PipelineError, ValueError) as exc:
        Console().print(f"[red]so101 pipeline:[/red] {exc}")
        raise typer.Exit(2) from None
    for name, why in steps:
        typer.echo(f"{name:<9} skip (unchanged)" if why == "skip" else f"{name:<9} run ({why})")
