"""Transport selection and the helpers node ``main()`` functions use.

``$SO101_TRANSPORT`` picks the backend: ``zenoh``, ``rclpy`` or ``auto`` (the default: rclpy when ``import
rclpy`` succeeds, i.e. in a sourced ROS 2 environment, else zenoh). A node file's entry point is::

    def main(args: list[str] | None = None) -> int:
        return run_node(JointStateSource, "joint_state_source", args)

``args`` are the process arguments without the program name (``sys.argv[1:]`` when ``None``), where
``--ros-args -p name:=value -r __ns:=/x ...`` set parameters, names and remappings on either backend.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import Any

from nodegraph.graph.api import GraphError, Node
from nodegraph.transport import shutdown
from nodegraph.transport.log import node_logger

ENV = "SO101_TRANSPORT"
BACKENDS = ("zenoh", "rclpy", "auto")


class BackendUnavailableError(GraphError):
    """The requested transport backend cannot be used in this environment."""


def rclpy_import_error() -> ImportError | None:
    """Why ``import rclpy`` fails here, or None when it works."""
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        return exc
    return None


def rclpy_available() -> bool:
    """True when ``import rclpy`` succeeds (a ROS 2 environment is sourced)."""
    return rclpy_import_error() is None


def backend_name() -> str:
    """``"zenoh"`` or ``"rclpy"``, as ``$SO101_TRANSPORT`` (``zenoh`` | ``rclpy`` | ``auto``) selects."""
    raw = os.environ.get(ENV, "")
    value = raw.strip().lower() or "auto"
    if value not in BACKENDS:
        raise ValueError(f"{ENV}={raw!r} is not a transport backend; use one of {', '.join(BACKENDS)}")
    if value == "auto":
        return "rclpy" if rclpy_available() else "zenoh"
    if value == "rclpy" and (error := rclpy_import_error()) is not None:
        raise BackendUnavailableError(
            f"{ENV}=rclpy, but rclpy does not import ({error}); source a ROS 2 Jazzy environment "
            f"(source /opt/ros/jazzy/setup.bash) or run scripts/setup (Jazzy's wheels), or use {ENV}=zenoh (or auto)"
        )
    return value


def create_node(name: str, args: list[str] | None = None, **kwargs: Any) -> Node:
    """A node named ``name`` on the selected backend; ``kwargs`` go to its constructor (``namespace``,
    ``parameter_overrides``)."""
    if backend_name() == "rclpy":
        from nodegraph.transport.rclpy.node import RclpyNode

        node: Node = RclpyNode(name, args=args, **kwargs)
    else:
        from nodegraph.transport.zenoh.node import ZenohNode

        node = ZenohNode(name, args=args, **kwargs)
    return node


def install_signal_handlers() -> None:
    """Make SIGINT/SIGTERM shut the process's nodes down, within a deadline (``nodegraph.transport.shutdown``;
    the same for both backends; main thread only)."""
    shutdown.install_signal_handlers()


def run_node(factory: Callable[[Node], object], name: str, args: list[str] | None = None) -> int:
    """Create the node, build its logic with ``factory(node)``, spin until SIGINT/SIGTERM, shut down.

    Returns the process exit code: 0 after a signal, 1 (with the error logged) when the node cannot be created
    or ``factory`` raises (e.g. a bad parameter), so that a launch sees the failure. When the logic object has
    a ``close()`` method it is called after the node has shut down (no callback runs any more by then).
    """
    try:
        shutdown.deadline_s()  # a bad $SO101_SHUTDOWN_DEADLINE_S is reported before anything starts
        node = create_node(name, args)
    except Exception as exc:
        node_logger(name).error(f"cannot create node {name!r}: {type(exc).__name__}: {exc}")
        return 1
    install_signal_handlers()  # from here on, a signal (even during startup) ends in a clean shutdown
    try:
        logic = factory(node)
    except KeyboardInterrupt:
        node.shutdown()
        return 0
    except Exception as exc:
        node.logger.error(f"failed to start: {type(exc).__name__}: {exc}")
        node.logger.debug(traceback.format_exc())
        node.shutdown()
        return 1
    node.spin()
    close = getattr(logic, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:
            node.logger.error(f"close() failed: {type(exc).__name__}: {exc}")
            return 1
    return 0
