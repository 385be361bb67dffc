"""``so101 topic echo | hz | pub | info``."""

from __future__ import annotations

import itertools
import math
import statistics
import threading
import time
from typing import Any

import typer
import yaml
from nodegraph.graph.api import EndpointInfo
from nodegraph.graph.qos import QoS, adapted_to
from nodegraph.interfaces.messages import from_plain, to_plain

from so101_cli.common import cli_node, find_topic_type, interrupt_event, parse_yaml_fields

app = typer.Typer(help="Inspect and publish topics.", no_args_is_help=True)
MAX_ARRAY_ITEMS = 16


def _abbreviate(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _abbreviate(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > MAX_ARRAY_ITEMS:
            return f"<sequence of {len(value)} items>"
        return [_abbreviate(v) for v in value]
    return value


def _resolve_type(node: Any, topic: str, type_name: str | None, wait_s: float, stop: threading.Event) -> str:
    if type_name:
        return type_name
    found = find_topic_type(node, topic, wait_s, stop)
    if stop.is_set():
        raise typer.Exit(0)
    if found is None:
        raise typer.BadParameter(f"no publisher of {topic} seen within {wait_s:g} s; give its type explicitly")
    return found


@app.command()
def echo(
    topic: str,
    type_name: str = typer.Argument(None, help="message type, e.g. sensor_msgs/msg/JointState"),
    count: int = typer.Option(0, "--count", "-n", help="exit after N messages (0: until Ctrl-C)"),
    full_arrays: bool = typer.Option(False, "--full-arrays", help="print long sequences in full"),
    wait_s: float = typer.Option(5.0, "--wait", help="seconds to wait for the topic to appear"),
    best_effort: bool = typer.Option(False, "--best-effort", help="subscribe best-effort"),
) -> None:
    """Print messages of TOPIC as YAML."""
    with cli_node("echo") as node, interrupt_event() as stop:
        resolved_type = _resolve_type(node, topic, type_name, wait_s, stop)
        received = 0
        lock = threading.Lock()

        def on_message(msg: Any) -> None:
            nonlocal received
            with lock:
                if count and received >= count:
                    return
                plain = to_plain(msg)
                typer.echo(yaml.safe_dump(plain if full_arrays else _abbreviate(plain), sort_keys=False) + "---")
                received += 1
                if count and received >= count:
                    stop.set()

        # as ros2 topic echo: match the publishers (a latched topic's last message arrives)
        resolved = node.resolve(topic)
        node.context.graph.wait_for(lambda ts: any(t.kind == "MP" and t.name == resolved for t in ts), 1.0, stop)
        qos = adapted_to([p.qos for p in node.publishers_info_by_topic(topic)])
        if best_effort:
            qos = QoS(reliability="best_effort", durability=qos.durability)
        node.create_subscription(resolved_type, topic, on_message, qos)
        stop.wait()


@app.command()
def hz(
    topic: str,
    type_name: str = typer.Argument(None, help="message type (found on the graph when omitted)"),
    window: int = typer.Option(100, "--window", "-w", help="messages in the statistics window"),
    duration_s: float = typer.Option(0.0, "--duration", help="exit after S seconds (0: until Ctrl-C)"),
    wait_s: float = typer.Option(5.0, "--wait", help="seconds to wait for the topic to appear"),
) -> None:
    """Print the publishing rate of TOPIC every second (average, min, max, std dev of the period)."""
    with cli_node("hz") as node, interrupt_event() as stop:
        resolved_type = _resolve_type(node, topic, type_name, wait_s, stop)
        arrivals: list[float] = []
        fresh = 0  # arrivals since the last report
        lock = threading.Lock()

        def on_raw(_: Any) -> None:
            nonlocal fresh
            with lock:
                arrivals.append(time.monotonic())
                fresh += 1
                del arrivals[: max(0, len(arrivals) - window - 1)]

        node.create_subscription(resolved_type, topic, on_raw, raw=True)
        end = time.monotonic() + duration_s if duration_s else math.inf
        while not stop.wait(1.0) and time.monotonic() < end:
            with lock:
                periods = [b - a for a, b in itertools.pairwise(arrivals)]
                new, fresh = fresh, 0
            if not new or not periods:  # as ros2 topic hz: never repeat a stale rate
                typer.echo("no new messages")
                continue
            mean = statistics.fmean(periods)
            std = statistics.pstdev(periods)
            typer.echo(
                f"average rate: {1.0 / mean:.3f}\n\tmin: {min(periods):.3f}s max: {max(periods):.3f}s "
                f"std dev: {std:.5f}s window: {len(periods) + 1}"
            )


@app.command()
def pub(
    topic: str,
    type_name: str,
    values: str = typer.Argument("{}", help='message fields as YAML, e.g. "{data: hello}"'),
    rate_hz: float = typer.Option(1.0, "--rate", "-r", help="publishing rate, Hz"),
    times: int = typer.Option(0, "--times", "-t", help="publish N times then exit (0: until Ctrl-C)"),
    once: bool = typer.Option(False, "--once", "-1", help="publish one message and exit"),
    wait_s: float = typer.Option(1.0, "--wait-matching", help="seconds to wait for subscribers first"),
) -> None:
    """Publish a message built from YAML on TOPIC."""
    fields = parse_yaml_fields(values, "values")
    with cli_node("pub") as node, interrupt_event() as stop:
        try:
            msg = from_plain(type_name, fields)
        except (ValueError, LookupError) as exc:
            raise typer.BadParameter(str(exc)) from exc
        publisher = node.create_publisher(type_name, topic)
        stop.wait(wait_s)
        total = 1 if once else times
        sent = 0
        while not stop.is_set():
            publisher.publish(msg)
            sent += 1
            typer.echo(f"publishing #{sent}: {to_plain(msg)}")
            if total and sent >= total:
                break
            stop.wait(1.0 / rate_hz)
        stop.wait(0.2)  # let the last sample leave before the session closes


def _qos_lines(qos: QoS) -> list[str]:
    return [
        "QoS profile:",
        f"  Reliability: {qos.reliability.upper()}",
        f"  History (Depth): {qos.history.upper()} ({qos.depth})",
        f"  Durability: {qos.durability.upper()}",
        f"  Lifespan: {qos.lifespan_ns} nanoseconds" if qos.lifespan_ns else "  Lifespan: Infinite",
        "  Deadline: Infinite",
        "  Liveliness: AUTOMATIC",
        "  Liveliness lease duration: Infinite",
    ]


def _endpoint_lines(endpoint: EndpointInfo) -> list[str]:
    gid = ".".join(f"{b:02x}" for b in endpoint.gid)
    return [
        f"Node name: {endpoint.node_name}",
        f"Node namespace: {endpoint.node_namespace}",
        f"Topic type: {endpoint.topic_type}",
        f"Topic type hash: {endpoint.topic_type_hash}",
        f"Endpoint type: {endpoint.endpoint_type}",
        f"GID: {gid}",
        *_qos_lines(endpoint.qos),
        "",
    ]


@app.command()
def info(
    topic: str,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="each endpoint's node, type hash, GID and QoS"),
    wait_s: float = typer.Option(5.0, "--wait", help="seconds to wait for the topic to appear"),
) -> None:
    """Type and publisher/subscription counts of TOPIC, like ``ros2 topic info [-v]``; exit 1 when it does
    not appear within --wait."""
    with cli_node("info") as node, interrupt_event() as stop:
        if find_topic_type(node, topic, wait_s, stop) is None:
            if stop.is_set():
                raise typer.Exit(130)
            typer.echo(f"Unknown topic '{node.resolve(topic)}' (waited {wait_s:g} s)", err=True)
            raise typer.Exit(1)
        stop.wait(0.3)  # let the other endpoints' tokens arrive too
        own = node.name
        publishers = [e for e in node.publishers_info_by_topic(topic) if e.node_name != own]
        subscriptions = [e for e in node.subscriptions_info_by_topic(topic) if e.node_name != own]
    types = sorted({e.topic_type for e in publishers + subscriptions})
    lines = [f"Type: {', '.join(types)}", ""]
    lines.append(f"Publisher count: {len(publishers)}")
    lines.append("")
    if verbose:
        for endpoint in publishers:
            lines += _endpoint_lines(endpoint)
    lines.append(f"Subscription count: {len(subscriptions)}")
    if verbose:
        lines.append("")
        for endpoint in subscriptions:
            lines += _endpoint_lines(endpoint)
    typer.echo("\n".join(lines).rstrip("\n"))
