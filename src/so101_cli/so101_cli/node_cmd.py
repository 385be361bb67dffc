"""``so101 node list | info NODE``, like ``ros2 node``: a node's publishers, subscribers, services, actions."""

from __future__ import annotations

from collections import defaultdict

import typer
from nodegraph.transport.zenoh.keyexpr import ParsedToken, dds_to_ros_type

from so101_cli.common import cli_node, interrupt_event, node_fqn, wait_for_node

app = typer.Typer(help="List nodes and show what a node offers.", no_args_is_help=True)
ACTION_INFIX = "/_action/"
SECTIONS = ("Subscribers", "Publishers", "Service Servers", "Service Clients", "Action Servers", "Action Clients")


def _fqn(token: ParsedToken) -> str:
    return f"{token.namespace.rstrip('/')}/{token.node_name}"


def node_entities(tokens: list[ParsedToken], fqn: str) -> dict[str, dict[str, set[str]]]:
    """``section → name → types`` of node ``fqn``, sections as ``ros2 node info`` prints them."""
    out: dict[str, dict[str, set[str]]] = {s: defaultdict(set) for s in SECTIONS}
    for token in tokens:
        if token.kind == "NN" or _fqn(token) != fqn:
            continue
        type_name = dds_to_ros_type(token.dds_type)
        if ACTION_INFIX in token.name:
            action, _, part = token.name.partition(ACTION_INFIX)
            if part == "send_goal" and token.kind in ("SS", "SC"):
                section = "Action Servers" if token.kind == "SS" else "Action Clients"
                out[section][action].add(type_name.removesuffix("_SendGoal"))
            continue
        sections = {"MS": "Subscribers", "MP": "Publishers", "SS": "Service Servers", "SC": "Service Clients"}
        out[sections[token.kind]][token.name].add(type_name)
    return out


@app.command()
def info(
    node_name: str,
    wait_s: float = typer.Option(5.0, "--wait", help="seconds to wait for the node to appear"),
) -> None:
    """Print NODE's subscribers, publishers, service servers and clients, action servers and clients."""
    target = node_fqn(node_name)
    with cli_node("node") as node, interrupt_event() as stop:
        if not wait_for_node(node, target, wait_s, stop):
            if stop.is_set():
                raise typer.Exit(130)
            typer.echo(f"Unable to find node '{target}' (waited {wait_s:g} s)", err=True)
            raise typer.Exit(1)
        stop.wait(0.5)  # the node's endpoint tokens arrive with or just after its own
        entities = node_entities(node.context.graph.tokens(), target)
    typer.echo(target)
    for section in SECTIONS:
        typer.echo(f"  {section}:")
        for name in sorted(entities[section]):
            typer.echo(f"    {name}: {', '.join(sorted(entities[section][name]))}")


@app.command("list")
def list_nodes(wait_s: float = typer.Option(1.0, "--wait", help="seconds to listen for the graph")) -> None:
    """The nodes on the graph."""
    with cli_node("node") as node, interrupt_event() as stop:
        stop.wait(wait_s)
        names = sorted({_fqn(t) for t in node.context.graph.tokens() if t.kind == "NN" and t.node_name != node.name})
    for name in names:
        typer.echo(name)
