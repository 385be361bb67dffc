"""``so101 param list | get | set | dump NODE``, like ``ros2 param``, through the node's parameter services."""

from __future__ import annotations

from typing import Any

import typer
import yaml
from nodegraph.graph import parameters as p
from nodegraph.interfaces.parameter_values import from_value_msg, parameter_msg
from nodegraph.transport.zenoh.node import ZenohNode

from so101_cli.common import call_interruptibly, cli_node, interrupt_event, node_fqn, wait_for_node

app = typer.Typer(help="List, get, set and dump the parameters of a node.", no_args_is_help=True)
SRV = "rcl_interfaces/srv/"
WAIT = typer.Option(5.0, "--wait", help="seconds to wait for the node to appear")
TIMEOUT = typer.Option(5.0, "--timeout", help="seconds to wait for each answer")
_LABELS = {p.BOOL: "Boolean value is", p.INTEGER: "Integer value is", p.DOUBLE: "Double value is",
           p.STRING: "String value is", p.BYTE_ARRAY: "Byte values are", p.BOOL_ARRAY: "Boolean values are",
           p.INTEGER_ARRAY: "Integer values are", p.DOUBLE_ARRAY: "Double values are",
           p.STRING_ARRAY: "String values are"}  # fmt: skip


class _Session:
    """One CLI node, the target node's name, and the Ctrl-C event."""

    def __init__(self, node: ZenohNode, target: str, stop: Any, timeout_s: float) -> None:
        self.node, self.target, self.stop, self.timeout_s = node, target, stop, timeout_s

    def call(self, service: str, type_name: str, **fields: Any) -> Any:
        client = self.node.create_client(SRV + type_name, f"{self.target}/{service}")
        if not client.wait_for_service(self.timeout_s):
            typer.echo(f"node {self.target} offers no {service} service", err=True)
            raise typer.Exit(1)
        request = self.node.message(f"{SRV}{type_name}_Request", **fields)
        return call_interruptibly(client, request, self.timeout_s, self.stop)

    def names(self) -> list[str]:
        return list(self.call("list_parameters", "ListParameters").result.names)

    def values(self, names: list[str]) -> list[Any]:
        return list(self.call("get_parameters", "GetParameters", names=names).values)


def _session(name: str, wait_s: float, timeout_s: float, body: Any) -> None:
    target = node_fqn(name)
    with cli_node("param") as node, interrupt_event() as stop:
        if not wait_for_node(node, target, wait_s, stop):
            if stop.is_set():
                raise typer.Exit(130)
            typer.echo(f"Node not found: {target} (waited {wait_s:g} s)", err=True)
            raise typer.Exit(1)
        body(_Session(node, target, stop, timeout_s))


@app.command("list")
def list_parameters(node_name: str, wait_s: float = WAIT, timeout_s: float = TIMEOUT) -> None:
    """The names of NODE's parameters."""

    def body(session: _Session) -> None:
        typer.echo(f"{session.target}:")
        for name in sorted(session.names()):
            typer.echo(f"  {name}")

    _session(node_name, wait_s, timeout_s, body)


@app.command()
def get(node_name: str, name: str, wait_s: float = WAIT, timeout_s: float = TIMEOUT) -> None:
    """Print the value of parameter NAME of NODE (exit 1 when it is not declared)."""

    def body(session: _Session) -> None:
        values = session.values([name])
        if not values or int(values[0].type) == p.NOT_SET:
            typer.echo("Parameter not set.", err=True)
            raise typer.Exit(1)
        typer.echo(f"{_LABELS[int(values[0].type)]}: {from_value_msg(values[0])}")

    _session(node_name, wait_s, timeout_s, body)


@app.command("set")
def set_parameter(
    node_name: str,
    name: str,
    value: str = typer.Argument(..., help="the new value as YAML (5, 2.5, true, text, [1, 2])"),
    wait_s: float = WAIT,
    timeout_s: float = TIMEOUT,
) -> None:
    """Set parameter NAME of NODE; exit 1 with the node's reason when it refuses."""
    try:
        parsed = yaml.safe_load(value)
        message = parameter_msg(name, parsed)
    except (yaml.YAMLError, p.ParameterError) as exc:
        raise typer.BadParameter(f"value {value!r}: {exc}") from exc

    def body(session: _Session) -> None:
        (result,) = session.call("set_parameters", "SetParameters", parameters=[message]).results
        if not result.successful:
            typer.echo(f"Setting parameter failed: {result.reason}", err=True)
            raise typer.Exit(1)
        typer.echo("Set parameter successful")

    _session(node_name, wait_s, timeout_s, body)


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in sorted(flat.items()):
        *parents, leaf = key.split(".")
        branch = tree
        for part in parents:
            branch = branch.setdefault(part, {})
        branch[leaf] = value
    return tree


@app.command()
def dump(node_name: str, wait_s: float = WAIT, timeout_s: float = TIMEOUT) -> None:
    """Print NODE's parameters as a parameter file (``ros__parameters`` YAML, loadable with --params-file)."""

    def body(session: _Session) -> None:
        names = session.names()
        values = session.values(names)
        flat = {n: from_value_msg(v) for n, v in zip(names, values, strict=False)}
        flat = {n: (list(v) if isinstance(v, bytes) else v) for n, v in flat.items()}
        typer.echo(yaml.safe_dump({session.target: {"ros__parameters": _nest(flat)}}, sort_keys=False), nl=False)

    _session(node_name, wait_s, timeout_s, body)
