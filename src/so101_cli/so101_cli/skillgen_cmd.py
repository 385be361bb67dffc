"""``so101 skillgen ...``: the SkillGen demo multiplier (``generate``), with a live progress bar."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

app = typer.Typer(help="SkillGen: multiply seed demonstrations in the twin.", no_args_is_help=True)


@app.callback()
def _group() -> None:
    """SkillGen: multiply seed demonstrations in the twin (keeps ``generate`` a sub-command)."""


@app.command()
def generate(
    seeds: Path = typer.Option(..., "--seeds", help="directory of seed demos (*.npz)"),
    num_demos: int = typer.Option(..., "-n", "--num-demos", min=1, help="demos to keep"),
    config: Path | None = typer.Option(None, "--config", help="skillgen YAML (default config/skillgen.yaml)"),
    out: Path = typer.Option(Path("data/skillgen"), "--out", help="output directory (resumed if it exists)"),
    workers: int = typer.Option(1, "--workers", min=1, help="parallel workers (1 = in this process)"),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (default: a local Ray)"),
    executor: str = typer.Option("ray", "--executor", help="ray | local (processes; where Ray is absent)"),
    dr_profile: str | None = typer.Option(None, "--dr-profile", help="dr.yaml profile, e.g. wide"),
    task_variant: str | None = typer.Option(
        None, "--task", help="task.yaml variant the seeds were recorded with, e.g. multi_vial (default: the base)"
    ),
) -> None:
    """Generate demos until N are kept (or the num_trials budget is spent); resumable, failures kept.

    With ``--workers N`` attempts shard over N Ray workers (or local processes); the kept demos are the
    same as with one worker for the same random_seed.
    """
    from so101_core.seeds.format import SeedFormatError
    from so101_core.sim.config import load_task_config
    from so101_core.sim.errors import SimError
    from so101_core.sim.randomization import load_dr_config
    from so101_skillgen.config import load_skillgen_config
    from so101_skillgen.errors import SkillGenError
    from so101_skillgen.executors import make_executor
    from so101_skillgen.generation import Generator, ProgressEvent, load_seed_dir

    console = Console(stderr=True)
    try:
        cfg = load_skillgen_config(config)
        demos, names = load_seed_dir(seeds)
        dr = load_dr_config(profile=dr_profile) if dr_profile else None
        gen = Generator(demos, cfg, names=names, dr=dr, task=load_task_config(variant=task_variant))
        ex = make_executor(gen, workers, backend=executor, address=address)
    except (SkillGenError, SeedFormatError, SimError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    budget = num_demos * cfg.num_trials if cfg.generation_guarantee else num_demos
    columns = (
        TextColumn("[bold]kept"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("attempts {task.fields[attempts]}/{task.fields[budget]}  yield {task.fields[yld]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("generate", total=num_demos, attempts=0, budget=budget, yld="-")

        def on_event(ev: ProgressEvent) -> None:
            yld = f"{ev.kept / ev.attempted:.0%}" if ev.attempted else "-"
            bar.update(task, completed=ev.kept, attempts=ev.attempted, yld=yld)

        try:
            with ex:
                summary = gen.run(out, num_demos, on_event, executor=ex)
        except SkillGenError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
    table = Table(title=f"SkillGen → {summary.out_dir}")
    table.add_column("outcome")
    table.add_column("attempts", justify="right")
    table.add_row("kept", str(summary.kept))
    for reason, count in summary.failures_by_reason.items():
        table.add_row(f"failed: {reason}", str(count))
    table.add_row("total", str(summary.attempted))
    table.add_row("yield", f"{summary.yield_:.1%}")
    table.add_row("yield (workshop rule)", f"{summary.yield_workshop:.1%}")
    if summary.workers > 1:
        table.add_row("workers (restarted)", f"{summary.workers} ({summary.worker_restarts})")
    Console().print(table)
    if not summary.complete:
        console.print(f"[yellow]attempt budget spent: {summary.kept}/{summary.target} kept[/yellow]")
        raise typer.Exit(1)
