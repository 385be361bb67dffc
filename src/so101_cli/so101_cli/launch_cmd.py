"""``so101 launch NAME [arg:=value ...] [--transport zenoh|rclpy]``: run a launch description (node processes;
a zenoh router on zenoh)."""

from __future__ import annotations

import typer
from nodegraph.launch.errors import LaunchError
from nodegraph.launch.runner import RunnerOptions, launch_transport
from so101_bringup.launch.catalog import get_launch, run_launch


def launch(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="launch name (e.g. sim, real, teleop, record, demo)"),
    show_args: bool = typer.Option(False, "--show-args", "-s", help="list the launch's arguments and exit"),
    no_router: bool = typer.Option(False, "--no-router", help="do not start a zenoh router (use a running one)"),
    transport: str | None = typer.Option(
        None,
        "--transport",
        help="the nodes' backend: zenoh (default; a router on 127.0.0.1) or rclpy (DDS in $ROS_DOMAIN_ID, no "
        "router); default $SO101_TRANSPORT when it says zenoh or rclpy",
    ),
) -> None:
    """Start a launch: each node as a process (and a zenoh router on 127.0.0.1 on zenoh); Ctrl-C stops all.

    Launch arguments follow as ``name:=value``. Exits non-zero when a required node dies.
    """
    try:
        if show_args:
            typer.echo(get_launch(name).describe())
            return
        options = RunnerOptions(transport=launch_transport(transport), router=not no_router)
        code = run_launch(name, list(ctx.args), options)
    except LaunchError as exc:
        typer.echo(f"so101 launch: {exc}", err=True)
        raise typer.Exit(2) from exc
    raise typer.Exit(code)
