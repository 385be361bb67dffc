"""``so101 launch NAME [arg:=value ...]``: run a launch description without ROS (router + node processes)."""

from __future__ import annotations

import typer

from so101_bringup.launch.catalog import launch_names
from so101_bringup.launch.errors import LaunchError
from so101_bringup.launch.runner import run_launch


def launch(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="launch name (e.g. demo, record)"),
) -> None:
    """Start a launch: a zenoh router on 127.0.0.1 and each node as a process; Ctrl-C stops all.

    Launch arguments follow as ``name:=value``. Exits non-zero when a required node dies.
    """
    try:
        code = run_launch(name, list(ctx.args))
    except LaunchError as exc:
        typer.echo(f"so101 launch: {exc}\navailable launches: {', '.join(launch_names())}", err=True)
        raise typer.Exit(2) from exc
    raise typer.Exit(code)
