"""``so101 service call NAME TYPE [YAML]`` and ``so101 service list``, like ``ros2 service``."""

from __future__ import annotations

import time

import typer
import yaml
from nodegraph.interfaces import InterfaceError, interface_info
from nodegraph.interfaces.messages import MessageError, from_plain, to_plain
from nodegraph.transport.zenoh.keyexpr import ParsedToken, dds_to_ros_type

from so101_cli.common import call_interruptibly, cli_node, interrupt_event, parse_yaml_fields

app = typer.Typer(help="Call and list services.", no_args_is_help=True)


@app.command()
def call(
    name: str,
    type_name: str,
    request: str = typer.Argument("{}", help="request fields as YAML"),
    wait_s: float = typer.Option(5.0, "--wait", help="seconds to wait for the service to appear"),
    timeout_s: float = typer.Option(10.0, "--timeout", help="seconds to wait for the answer"),
) -> None:
    """Call service NAME of TYPE with the YAML request; print the response. Exit 1 when the service does
    not appear within --wait or does not answer within --timeout; Ctrl-C ends it (exit 130)."""
    fields = parse_yaml_fields(request, "request")
    try:
        info = interface_info(type_name)
        if not info.is_service:
            raise typer.BadParameter(f"{type_name} is not a service type")
        request_msg = from_plain(info.part("Request"), fields)
    except (InterfaceError, MessageError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    with cli_node("service") as node, interrupt_event() as stop:
        client = node.create_client(info.name, name)
        resolved = node.resolve(name)

        def present(tokens: list[ParsedToken]) -> bool:
            return any(t.kind == "SS" and t.name == resolved for t in tokens)

        if not node.context.graph.wait_for(present, wait_s, stop):
            if stop.is_set():
                raise typer.Exit(130)
            typer.echo(f"service {resolved} not available after {wait_s:g} s", err=True)
            raise typer.Exit(1)
        time.sleep(0.1)  # let the router finish routing to the new queryable
        typer.echo("requester: making request:\n" + yaml.safe_dump(to_plain(request_msg), sort_keys=False))
        response = call_interruptibly(client, request_msg, timeout_s, stop)
        typer.echo("response:\n" + yaml.safe_dump(to_plain(response), sort_keys=False))


@app.command("list")
def list_services(
    show_types: bool = typer.Option(False, "--show-types", "-t", help="print each service's type"),
    wait_s: float = typer.Option(1.0, "--wait", help="seconds to listen for the graph"),
) -> None:
    """List the services on the graph (action internals included, as ``ros2 service list``)."""
    with cli_node("service") as node, interrupt_event() as stop:
        stop.wait(wait_s)
        services: dict[str, set[str]] = {}
        for token in node.context.graph.tokens():
            if token.kind == "SS":
                services.setdefault(token.name, set()).add(dds_to_ros_type(token.dds_type))
    for name in sorted(services):
        typer.echo(name + (f" [{', '.join(sorted(services[name]))}]" if show_types else ""))
