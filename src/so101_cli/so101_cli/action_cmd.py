"""``so101 action send-goal NAME TYPE YAML``: send a goal, print feedback and the result; Ctrl-C cancels."""

from __future__ import annotations

import time
from typing import Any

import typer
import yaml
from nodegraph.graph.api import GoalStatus
from nodegraph.interfaces.messages import from_plain, to_plain

from so101_cli.common import cli_node, interrupt_event, parse_yaml_fields

app = typer.Typer(help="Send goals to actions.", no_args_is_help=True)


@app.command("send-goal")
def send_goal(
    name: str,
    type_name: str,
    goal: str = typer.Argument("{}", help="goal fields as YAML"),
    feedback: bool = typer.Option(True, "--feedback/--no-feedback", "-f", help="print feedback"),
    wait_s: float = typer.Option(10.0, "--wait", help="seconds to wait for the action server"),
) -> None:
    """Send a goal; exit 0 when it succeeds, 1 otherwise (canceled, aborted, rejected)."""
    fields = parse_yaml_fields(goal, "goal")
    with cli_node("action") as node, interrupt_event() as stop:
        try:
            goal_msg = from_plain(f"{type_name}_Goal", fields)
        except (ValueError, LookupError) as exc:
            raise typer.BadParameter(str(exc)) from exc
        client = node.create_action_client(type_name, name)
        deadline = time.monotonic() + wait_s
        while not client.wait_for_server(min(0.2, max(0.0, deadline - time.monotonic()))):
            if stop.is_set():
                raise typer.Exit(130)
            if time.monotonic() < deadline:
                continue
            typer.echo(f"action server {name} not available after {wait_s:g} s", err=True)
            raise typer.Exit(1)

        def on_feedback(msg: Any) -> None:
            if feedback:
                typer.echo("Feedback:\n" + yaml.safe_dump(to_plain(msg), sort_keys=False))

        typer.echo(f"Sending goal:\n{yaml.safe_dump(to_plain(goal_msg), sort_keys=False)}")
        handle = client.send_goal(goal_msg, on_feedback)
        if not handle.accepted:
            typer.echo("Goal was rejected.", err=True)
            raise typer.Exit(1)
        typer.echo(f"Goal accepted with ID: {handle.goal_id.hex()}")
        canceled = False
        while not handle.done():
            if stop.wait(0.1) and not canceled:
                typer.echo("Canceling goal...")
                canceled = True
                typer.echo("Goal canceling." if handle.cancel() else "Cancel request was rejected.")
        status, result = handle.result(timeout_s=1.0)
        typer.echo(f"Result:\n{yaml.safe_dump(to_plain(result), sort_keys=False)}")
        typer.echo(f"Goal finished with status: {GoalStatus(status).name}")
        if status != GoalStatus.SUCCEEDED:
            raise typer.Exit(1)
