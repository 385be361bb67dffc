"""The typestore: ROS 2 Jazzy messages, standard services/actions rosbags lacks, and installed interface packages.

Every ROS type is addressed by its canonical name ``pkg/msg/Name``, ``pkg/srv/Name`` or ``pkg/action/Name``
(``pkg/Name`` is read as a message). ``interface_info`` tells what kind a name is and the names of its parts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Literal

from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.store import Typestore

from nodegraph.interfaces.definitions import parse_package_dir
from nodegraph.interfaces.hashing import rihs01

STD_DIR = Path(__file__).with_name("std")
Kind = Literal["msg", "srv", "action"]


class InterfaceError(LookupError):
    """An interface name is unknown or malformed."""


#: Entry-point group through which packages contribute interface directories: ``name = module:function``,
#: the function returning the directory holding that package's ``msg/``, ``srv/`` and ``action/`` folders.
INTERFACE_GROUP = "nodegraph.interfaces"
INTERFACE_PATH_ENV = "NODEGRAPH_INTERFACE_PATH"


def interface_packages() -> dict[str, Path]:
    """Extra interface packages ``{name: directory}``, found in this order (first wins):

    ``$NODEGRAPH_INTERFACE_PATH`` (``os.pathsep``-separated package directories, named by their folder),
    ``share/<name>`` of each ament prefix for the names declared below, and the ``nodegraph.interfaces``
    entry points that installed packages declare (so the runtime never hard-wires a robot's messages).
    """
    found: dict[str, Path] = {}
    for entry in filter(None, os.environ.get(INTERFACE_PATH_ENV, "").split(os.pathsep)):
        found.setdefault(Path(entry).name, Path(entry))
    declared = {ep.name: ep for ep in entry_points(group=INTERFACE_GROUP)}
    for name in declared:
        for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
            share = Path(prefix) / "share" / name
            if _has_interfaces(share):
                found.setdefault(name, share)
    for name, ep in declared.items():
        if name not in found:
            found[name] = Path(ep.load()())
    for name, directory in found.items():
        if not _has_interfaces(directory):
            raise InterfaceError(f"interface package {name!r}: no msg/, srv/ or action/ folder in {directory}")
    return found


def _has_interfaces(directory: Path) -> bool:
    return any((directory / kind).is_dir() for kind in ("msg", "srv", "action"))


@cache
def typestore() -> Typestore:
    """The shared typestore (built once per process): Jazzy, the standard extras, and :func:`interface_packages`."""
    store = get_typestore(Stores.ROS2_JAZZY)
    for package_dir in sorted(p for p in STD_DIR.iterdir() if p.is_dir()):
        store.register(parse_package_dir(package_dir))
    for name, directory in sorted(interface_packages().items()):
        store.register(parse_package_dir(directory, name))
    return store


def normalize(name: str) -> str:
    """Canonical ``pkg/kind/Name`` for ``pkg/Name`` or ``pkg/kind/Name``; raises InterfaceError when malformed."""
    parts = name.strip().strip("/").split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or parts[1] not in ("msg", "srv", "action") or not all(parts):
        raise InterfaceError(f"malformed interface name {name!r}: expected pkg/msg|srv|action/Name")
    return "/".join(parts)


@dataclass(frozen=True)
class InterfaceInfo:
    """A resolved interface: its kind, canonical name, DDS name as rmw uses it, and RIHS01 hash."""

    name: str
    kind: Kind
    dds_name: str
    type_hash: str

    @property
    def is_service(self) -> bool:
        """True for services, including an action's ``_SendGoal`` and ``_GetResult``."""
        return f"{self.name}_Request" in typestore().fielddefs

    def part(self, suffix: str) -> str:
        """Name of a generated part, e.g. ``part("Request")`` → ``pkg/srv/Name_Request``."""
        return f"{self.name}_{suffix}"


@cache
def interface_info(name: str) -> InterfaceInfo:
    """Resolve ``name`` against the typestore; raises InterfaceError for unknown types."""
    canonical = normalize(name)
    store = typestore()
    if canonical not in store.fielddefs:
        raise InterfaceError(f"unknown interface type {name!r}")
    package, kind, short = canonical.split("/")
    return InterfaceInfo(
        name=canonical,
        kind=kind,  # type: ignore[arg-type]
        dds_name=f"{package}::{kind}::dds_::{short}_",
        type_hash=rihs01(canonical, store.fielddefs),
    )
