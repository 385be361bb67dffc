"""``so101 graph``: nodes, topics with types, services and actions seen on the zenoh graph."""

from __future__ import annotations

from collections import defaultdict

import typer
from nodegraph.transport.zenoh.keyexpr import ParsedToken, dds_to_ros_type
from rich.console import Console

from so101_cli.common import cli_node, interrupt_event

console = Console()
ACTION_INFIX = "/_action/"


def _fqn(token: ParsedToken) -> str:
    return f"{token.namespace.rstrip('/')}/{token.node_name}"


def summarize(tokens: list[ParsedToken], own_node: str) -> dict[str, dict[str, set[str]]]:
    """Group tokens into ``nodes``, ``topics``, ``services`` and ``actions`` (name → types or roles)."""
    out: dict[str, dict[str, set[str]]] = {k: defaultdict(set) for k in ("nodes", "topics", "services", "actions")}
    for token in tokens:
        if token.node_name == own_node:
            continue
        if token.kind == "NN":
            out["nodes"][_fqn(token)]
            continue
        type_name = dds_to_ros_type(token.dds_type)
        if ACTION_INFIX in token.name:
            action, _, part = token.name.partition(ACTION_INFIX)
            if part == "send_goal":
                out["actions"][action].add(type_name.removesuffix("_SendGoal"))
            continue
        group = "topics" if token.kind in ("MP", "MS") else "services"
        out[group][token.name].add(type_name)
    return out


def graph(
    wait_s: float = typer.Option(1.0, "--wait", help="seconds to listen for liveliness tokens"),
) -> None:
    """List nodes, topics (with types), services and actions, like ``ros2 node/topic/service/action list -t``."""
    with cli_node("graph") as node, interrupt_event() as stop:  # Ctrl-C ends the wait, like node list
        stop.wait(wait_s)
        summary = summarize(node.context.graph.tokens(), node.name)
    for section, entries in summary.items():
        console.print(f"[bold]{section}[/bold] ({len(entries)})", soft_wrap=True)
        for name in sorted(entries):
            types = ", ".join(sorted(entries[name]))
            # soft_wrap: one entry per line whatever the width (rich wraps at 80 columns when piped)
            console.print(f"  {name}" + (f" [dim]\\[{types}][/dim]" if types else ""), highlight=False,
                          soft_wrap=True)  # fmt: skip
