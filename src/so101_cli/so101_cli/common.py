"""Helpers shared by the CLI commands: a short-lived zenoh node, YAML parsing, Ctrl-C handling."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
import yaml
from nodegraph.transport.shutdown import signals_set
from nodegraph.transport.zenoh.node import ZenohNode


@contextmanager
def cli_node(purpose: str, parameters: dict[str, Any] | None = None) -> Iterator[ZenohNode]:
    """A zenoh node named after the command, shut down on exit (the CLI always speaks zenoh)."""
    node = ZenohNode(f"so101_{purpose}_{os.getpid()}", args=[], parameter_overrides=parameters,
                     start_parameter_services=False, enable_rosout=False)  # fmt: skip
    try:
        yield node
    finally:
        node.shutdown()


@contextmanager
def interrupt_event() -> Iterator[threading.Event]:
    """An event set by SIGINT/SIGTERM while the block runs. The exit is bounded from the first signal on
    (``nodegraph.transport.shutdown``: a second signal or the deadline ends the process); without a signal
    the previous handlers are restored after the block."""
    with signals_set(threading.Event()) as stop:
        yield stop


def parse_yaml_fields(text: str, what: str) -> dict[str, Any]:
    """Message fields from a YAML/flow mapping such as ``"{a: 1, b: [1, 2]}"``; exits with a clear error."""
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise typer.BadParameter(f"{what}: invalid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise typer.BadParameter(f"{what}: expected a mapping of fields, got {type(data).__name__}")
    return data


def find_topic_type(node: ZenohNode, topic: str, timeout_s: float, stop: threading.Event | None = None) -> str | None:
    """The type of ``topic`` as advertised on the graph, waiting up to ``timeout_s`` (or until ``stop``)."""
    resolved = node.resolve(topic)

    def known(_: Any) -> bool:
        return resolved in node.topic_names_and_types()

    node.context.graph.wait_for(known, timeout_s, stop)
    types = node.topic_names_and_types().get(resolved)
    return sorted(types)[0] if types else None


def wait_for_node(node: ZenohNode, fqn: str, timeout_s: float, stop: threading.Event | None = None) -> bool:
    """True once node ``fqn`` (``/ns/name``; a bare name means the root namespace) is on the graph."""
    wanted = "/" + fqn.strip("/")

    def present(tokens: list[Any]) -> bool:
        return any(t.kind == "NN" and f"{t.namespace.rstrip('/')}/{t.node_name}" == wanted for t in tokens)

    return node.context.graph.wait_for(present, timeout_s, stop)


def call_interruptibly(client: Any, request: Any, timeout_s: float, stop: threading.Event) -> Any:
    """``client.call(request)`` on a worker thread, so that Ctrl-C ends the wait at once (exit 130);
    a timeout exits 1 with a message."""
    from nodegraph.graph.api import ServiceTimeout

    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["response"] = client.call(request, timeout_s=timeout_s)
        except Exception as exc:
            outcome["error"] = exc
        done.set()

    threading.Thread(target=work, name="cli-call", daemon=True).start()
    while not done.wait(0.05):
        if stop.is_set():
            raise typer.Exit(130)
    error = outcome.get("error")
    if isinstance(error, ServiceTimeout):
        typer.echo(f"no answer within {timeout_s:g} s: {error}", err=True)
        raise typer.Exit(1)
    if error is not None:
        raise error
    return outcome["response"]


def node_fqn(name: str) -> str:
    """``/ns/name`` of a node name as the user typed it (``talker`` → ``/talker``)."""
    return "/" + name.strip("/")
