"""``so101 seeds record | info``: record seed demonstrations (pipeline step 1) and inspect seed files.

``record --scripted`` brings up its own graph through the launch runner (a zenoh router, the ``sim`` node,
the ``scripted_expert`` node and the ``seed_recorder`` node, which is required: the launch ends when it has
recorded the episodes); without ``--scripted`` only the ``seed_recorder`` runs, in teleop mode, against the
graph already running (the real arm or the twin, with the leader arm and the teleop node): its actions are
``/leader/joint_states``. Episode boundaries are services (std_srvs/Trigger): ``/seed_recorder/next_episode``
ends the episode and starts the next, ``/seed_recorder/stop`` ends it and stops; Ctrl-C stops too (the
episode in progress is saved). Also runs as ``python -m so101_cli.seeds_cmd``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from nodegraph.launch.description import LaunchDescriptionData, NodeEntry
from nodegraph.transport.zenoh.config import free_endpoint
from rich import box
from rich.console import Console
from rich.table import Table
from so101_core.robot_spec import CAMERA_NAMES
from so101_core.seeds.format import SeedDemo, SeedFormatError, load_seed

app = typer.Typer(help="Record seed demonstrations (scripted expert or teleop) and inspect seed files.")

PACKAGE = "so101_nodes"
FAST_REAL_TIME_FACTOR = 3.0
"""``--fast``: the closed loop (sim → expert → sim over the graph) keeps up at 3× real time even on a busy
2-core machine; ``real_time_factor`` 0 would let the sim run ahead of the expert (the sim does not wait
for commands)."""


def _cameras(value: str) -> list[str]:
    names = [c.strip() for c in value.split(",") if c.strip()]
    unknown = [c for c in names if c not in CAMERA_NAMES]
    if unknown:
        raise typer.BadParameter(f"unknown camera {unknown[0]!r} (known: {', '.join(CAMERA_NAMES)})")
    return names


def record_description(
    out: Path,
    *,
    scripted: bool,
    episodes: int,
    seed: int,
    real_time_factor: float,
    cameras: list[str],
    randomize: bool = True,
    max_steps: int = 0,
    service_timeout_s: float = 30.0,
) -> LaunchDescriptionData:
    """The graph ``so101 seeds record`` runs: sim + scripted expert + seed recorder, or the recorder alone."""
    recorder: dict[str, Any] = {
        "output": str(out.resolve()),
        "mode": "scripted" if scripted else "teleop",
        "episodes": episodes,
        "seed": seed,
        "max_steps": max_steps,
        "service_timeout_s": service_timeout_s,
    }
    nodes: list[NodeEntry] = []
    if scripted:
        nodes += [
            NodeEntry(
                PACKAGE,
                "sim",
                "sim",
                parameters=(
                    {
                        "cameras": list(cameras),
                        "seed": seed,
                        "randomize": randomize,
                        "real_time_factor": real_time_factor,
                    },
                ),
                required=True,
            ),
            NodeEntry(PACKAGE, "scripted_expert", "scripted_expert", parameters=({"autostart": False},), required=True),
        ]
        recorder["images"] = bool(cameras)
    nodes.append(NodeEntry(PACKAGE, "seed_recorder", "seed_recorder", parameters=(recorder,), required=True))
    return LaunchDescriptionData(
        name="seeds_record",
        description="Record seed demonstrations" + (" with the scripted expert in sim." if scripted else "."),
        nodes=tuple(nodes),
    )


def _seed_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("seed_*.npz")) or sorted(directory.glob("*.npz"))


def _table(directory: Path, title: str) -> tuple[Table, list[str]]:
    """A table of the seed files under ``directory``, and the errors of the unreadable ones."""
    table = Table(title=title, box=box.SIMPLE)
    for column in ("file", "seed", "source", "steps", "time [s]", "success", "end", "bag"):
        right = column in ("seed", "steps", "time [s]")
        table.add_column(column, justify="right" if right else "left", no_wrap=True)
    bad: list[str] = []
    for path in _seed_files(directory):
        try:
            demo: SeedDemo = load_seed(path)
        except SeedFormatError as exc:
            bad.append(str(exc))
            table.add_row(path.name, "", "", "", "", "[red]unreadable[/red]", "", "")
            continue
        bag = path.with_suffix("")
        table.add_row(
            path.name,
            "" if demo.seed is None else str(demo.seed),
            demo.source,
            str(demo.steps),
            f"{float(demo.t[-1]):.2f}",
            "[green]yes[/green]" if demo.success else "[red]no[/red]",
            str(demo.extra.get("end_reason", "")),
            f"{bag.name}/" if bag.is_dir() else "[red]missing[/red]",
        )
    return table, bad


@app.command()
def record(
    scripted: bool = typer.Option(False, "--scripted", help="record the sim's scripted expert (no hardware)"),
    episodes: int = typer.Option(5, "-n", "--episodes", help="episodes to record (teleop: 0 = until stopped)"),
    out: Path = typer.Option(Path("seeds"), "--out", help="output directory: seed_NNN/ bags + seed_NNN.npz"),
    seed: int = typer.Option(0, "--seed", help="scene seed of the first episode (episode i: seed + i)"),
    realtime: bool = typer.Option(True, "--realtime/--fast", help="run the sim at real time, or faster"),
    real_time_factor: float = typer.Option(0.0, "--real-time-factor", help="sim speed (overrides --fast)"),
    cameras: str = typer.Option("", "--cameras", help="cameras to render and record, e.g. ego,side,top"),
    max_steps: int = typer.Option(0, "--max-steps", help="control steps per episode (0: task.yaml's / none)"),
    service_timeout: float = typer.Option(30.0, "--service-timeout", help="s to wait for the sim's services"),
    endpoint: str = typer.Option("", "--endpoint", help="zenoh router endpoint (default: the usual one)"),
) -> None:
    """Record seed demos: --scripted brings up sim + expert; else teleop against the running graph."""
    from nodegraph.launch.runner import RunnerOptions, run_description
    from nodegraph.transport.zenoh.config import endpoint_accepts_connections, router_endpoint

    if episodes < 0 or (scripted and episodes == 0):
        raise typer.BadParameter("-n must be > 0 (teleop: >= 0)")
    rtf = real_time_factor or (1.0 if realtime else FAST_REAL_TIME_FACTOR)
    cams = _cameras(cameras)
    console = Console()
    chosen = endpoint or router_endpoint()
    if scripted and not endpoint and endpoint_accepts_connections(chosen):
        chosen = free_endpoint()  # a graph is running there (maybe a sim): keep ours apart
        console.print(f"a router already listens on the default endpoint; this recording uses {chosen}")
    data = record_description(
        out,
        scripted=scripted,
        episodes=episodes,
        seed=seed,
        real_time_factor=rtf,
        cameras=cams,
        max_steps=max_steps,
        service_timeout_s=service_timeout,
    )
    mode = f"scripted expert in sim at {rtf:g}x real time" if scripted else "teleop (/leader/joint_states)"
    console.print(f"recording {episodes or 'unlimited'} seed episode(s), {mode}, to {out}")
    code = run_description(data, (), RunnerOptions(endpoint=chosen))
    table, bad = _table(out, f"seeds in {out}") if out.is_dir() and _seed_files(out) else (None, [])
    if table is not None:
        console.print(table)
    for error in bad:
        console.print(f"[red]unreadable seed file: {error}[/red]")
    if code != 0:
        console.print(f"[red]so101 seeds record: the recording graph exited with status {code}[/red]")
        raise typer.Exit(code)
    if bad:
        raise typer.Exit(1)


@app.command()
def info(directory: Path = typer.Argument(..., help="directory of seed files (*.npz)")) -> None:
    """Table of the seed files in DIRECTORY."""
    if not directory.is_dir():
        typer.echo(f"so101 seeds info: {directory} is not a directory", err=True)
        raise typer.Exit(2)
    if not _seed_files(directory):
        typer.echo(f"so101 seeds info: no seed files (*.npz) in {directory}", err=True)
        raise typer.Exit(1)
    table, bad = _table(directory, f"seeds in {directory}")
    console = Console()
    console.print(table)
    for error in bad:
        console.print(f"[red]unreadable seed file: {error}[/red]")
    if bad:
        raise typer.Exit(1)


if __name__ == "__main__":
    sys.exit(app())
