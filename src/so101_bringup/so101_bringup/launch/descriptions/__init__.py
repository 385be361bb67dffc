"""One module per launch, each defining ``DESCRIPTION``; registered in ``so101_bringup.launch.catalog``. Their
nodes are built by :func:`node`."""

from collections.abc import Mapping
from typing import Any

from nodegraph.launch.description import NodeEntry


def node(
    package: str,
    executable: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    required: bool = False,
    condition: str | None = None,
) -> NodeEntry:
    """Node ``executable`` of ``package``, named after it unless ``name`` is given, pushed into the launch's
    ``namespace`` argument, with ``parameters`` (values or ``$(arg ...)`` substitutions) when given."""
    return NodeEntry(
        package=package,
        executable=executable,
        name=name or executable,
        namespace="$(arg namespace)",
        parameters=() if parameters is None else (parameters,),
        required=required,
        condition=condition,
    )
