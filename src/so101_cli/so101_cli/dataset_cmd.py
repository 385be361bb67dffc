"""``so101 dataset ...``: kept demos → rendered episodes → LeRobot v3.0 / v2.1 (GR00T), bags, mixes, reports."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

app = typer.Typer(
    help="Datasets: render kept demos, export LeRobot v3.0 / v2.1, bags, mix, report.", no_args_is_help=True
)
console = Console(stderr=True)

CONFIG = typer.Option(None, "--config", help="dataset YAML (default config/dataset.yaml)")
WIDTH = typer.Option(None, "--width", help="px (overrides the config)")
HEIGHT = typer.Option(None, "--height", help="px (overrides the config)")
WORKERS = typer.Option(None, "--workers", help="render processes (overrides the config)")
ADDRESS = typer.Option("", "--address", help="render on Ray: 'local' or a cluster address (default: processes here)")
DEMOS = typer.Option(..., "--demos", help="directory of kept demos (*.npz, e.g. a skillgen output)")
EPISODES = typer.Option(None, "--episodes", min=1, help="only the first N demos")


def _config(config: Path | None, **overrides: Any) -> Any:
    from so101_dataset.config import load_dataset_config

    return load_dataset_config(config).with_overrides(**overrides)


@contextmanager
def _errors() -> Iterator[None]:
    from so101_core.config import ConfigError
    from so101_dataset.errors import DatasetError

    try:
        yield
    except (DatasetError, ConfigError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update


def _render_command(name: str, out_help: str, stage: Callable[..., str]) -> None:
    """Register ``so101 dataset <name>`` (help: ``stage``'s docstring): ``stage(demos, out, cfg, **options)`` renders
    the demos under a progress bar and returns the line printed after it."""

    def command(
        demos: Path = DEMOS,
        out: Path = typer.Option(..., "--out", help=out_help),
        width: int | None = WIDTH,
        height: int | None = HEIGHT,
        workers: int | None = WORKERS,
        episodes: int | None = EPISODES,
        address: str = ADDRESS,
        config: Path | None = CONFIG,
    ) -> None:
        with _errors():
            cfg = _config(config, width=width, height=height, workers=workers)
            with _progress() as progress:
                line = stage(
                    demos, out, cfg, workers=cfg.workers, progress=progress, max_episodes=episodes, address=address
                )
        typer.echo(line)

    app.command(name, help=stage.__doc__)(command)


def _build(demos: Path, out: Path, cfg: Any, **options: Any) -> str:
    """Render and export: <out>/lerobot_v3, <out>/lerobot_v21, <out>/bags, <out>/report (resumable)."""
    from so101_core.episode_units import UNITS_DIR
    from so101_dataset.build import build_dataset

    r = build_dataset(demos, out, cfg, **options)
    line = f"{r.episodes} episodes, {r.frames} frames -> {r.v3_dir}, {r.v21_dir}, {r.bags_dir}, {r.report_dir}"
    if r.failed:
        line += f"\n{len(r.failed)} demo(s) failed (not in the datasets): see {out / UNITS_DIR / 'failures.json'}"
    return line


def _render(demos: Path, out: Path, cfg: Any, **options: Any) -> str:
    """Replay each demo through the ego/side/top cameras into one-episode LeRobot v3.0 units."""
    from so101_dataset.episodes import render_episodes

    s = render_episodes(demos, out, cfg, **options)
    return f"{s['rendered']} of {s['requested']} episodes rendered, {len(s['failed'])} failed, {s['wall_s']:.1f} s"


_render_command("build", "output directory (resumed if it exists)", _build)
_render_command("render", "output directory; units go to <out>/episodes (resumable)", _render)


@app.command()
def export(
    out: Path = typer.Argument(..., help="a render output directory (with episodes/)"),
    workers: int | None = WORKERS,
    config: Path | None = CONFIG,
) -> None:
    """Merge the rendered units into <out>/lerobot_v3 (lerobot aggregate) and write <out>/lerobot_v21 (GR00T)."""
    from so101_dataset.build import export as run_export

    with _errors():
        cfg = _config(config, workers=workers)
        v3, v21, episodes, frames = run_export(out, cfg, workers=cfg.workers)
    typer.echo(f"{episodes} episodes, {frames} frames -> {v3}, {v21}")


@app.command()
def bags(
    out: Path = typer.Argument(..., help="a render output directory (with episodes/)"),
    config: Path | None = CONFIG,
) -> None:
    """One rosbag2 (MCAP) per rendered episode under <out>/bags (play with `so101 bag play`)."""
    from so101_dataset.bags import write_bags
    from so101_dataset.episodes import selected_units

    with _errors():
        cfg = _config(config)
        with _progress() as progress:
            paths = write_bags(selected_units(out), out / "bags", cfg, progress)
    typer.echo(f"{len(paths)} bags in {out / 'bags'}")


@app.command()
def mix(
    sim: Path = typer.Option(..., "--sim", help="a `so101 dataset build` output directory"),
    real: Path = typer.Option(..., "--real", help="a LeRobot v3.0 dataset of real episodes"),
    ratio: float = typer.Option(..., "--ratio", help="sim share of the frames, 0 < R < 1"),
    out: Path = typer.Option(..., "--out", help="output v3.0 dataset directory (replaced)"),
    seed: int = typer.Option(0, "--seed", help="seed of the sim episode selection"),
    config: Path | None = CONFIG,
) -> None:
    """Co-training mix: physical merge of whole episodes at a sim frame share, with per-episode provenance."""
    from so101_dataset.mix import mix_datasets

    with _errors():
        summary = mix_datasets(sim, real, ratio, out, _config(config), seed=seed)
    typer.echo(json.dumps(summary, indent=1))


@app.command()
def report(
    out: Path = typer.Argument(..., help="a build output directory"),
    demos: Path | None = typer.Option(None, "--demos", help="the demo directory (for generation yield)"),
) -> None:
    """HTML page with plots + Markdown summary in <out>/report."""
    from so101_dataset.report import write_report

    with _errors():
        path = write_report(out, demos_dir=demos)
    typer.echo(f"{path / 'index.html'}\n{path / 'summary.md'}")
