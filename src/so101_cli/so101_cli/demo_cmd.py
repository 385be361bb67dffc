"""``so101 demo``: the main job on the embedded default (MuJoCo twin, Zenoh graph), end to end as far as the
pipeline goes today: the twin + scripted expert record seed demos (rosbag2 + seed files), SkillGen multiplies
them, and a summary is printed. Each step is the ``so101`` command a user would type."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import typer


def _run(title: str, args: list[str]) -> None:
    typer.secho(f"\n$ so101 {' '.join(args)}", bold=True)
    code = subprocess.call([sys.executable, "-m", "so101_cli.main", *args],
                           env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    if code != 0:
        typer.echo(f"so101 demo: '{title}' failed with exit code {code}", err=True)
        raise typer.Exit(code)


def demo(
    seeds: int = typer.Option(5, "--seeds", help="scripted seed demos to record"),
    demos: int = typer.Option(20, "--demos", help="demos SkillGen generates from them"),
    out: Path = typer.Option(None, "--out", help="output directory (default out/demo_<time>)"),
) -> None:
    """Record scripted seeds in the twin over the zenoh graph, multiply them with SkillGen, print a summary."""
    root = out or Path("out") / dt.datetime.now().strftime("demo_%Y%m%d_%H%M%S")
    seed_dir, generated = root / "seeds", root / "skillgen"
    _run("seeds record", ["seeds", "record", "--scripted", "-n", str(seeds), "--fast", "--out", str(seed_dir)])
    _run("skillgen generate", ["skillgen", "generate", "--seeds", str(seed_dir), "-n", str(demos),
                               "--out", str(generated)])  # fmt: skip
    _run("bag info", ["bag", "info", str(seed_dir / "seed_000")])
    typer.secho(f"\nDone: {seeds} seed demos (rosbag2 + .npz) in {seed_dir}, {demos} generated demos in {generated}.",
                bold=True)  # fmt: skip
