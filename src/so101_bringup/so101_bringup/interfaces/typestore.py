"""The project's typestore: ROS 2 Jazzy messages, standard services/actions rosbags lacks, and so101_msgs.

Every ROS type is addressed by its canonical name ``pkg/msg/Name``, ``pkg/srv/Name`` or ``pkg/action/Name``
(``pkg/Name`` is read as a message). ``interface_info`` tells what kind a name is and the names of its parts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.store import Typestore

from so101_bringup.interfaces.definitions import parse_package_dir
from so101_bringup.interfaces.hashing import rihs01

STD_DIR = Path(__file__).with_name("std")
Kind = Literal["msg", "srv", "action"]


class InterfaceError(LookupError):
    """An interface name is unknown or malformed."""


def so101_msgs_dir() -> Path:
    """Where so101_msgs' interface files are: $SO101_MSGS_DIR, an ament prefix, or this source tree."""
    candidates = []
    if env := os.environ.get("SO101_MSGS_DIR"):
        candidates.append(Path(env))
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        candidates.append(Path(prefix) / "share" / "so101_msgs")
    candidates.append(Path(__file__).resolve().parents[3] / "so101_msgs")
    for candidate in candidates:
        if (candidate / "action").is_dir() or (candidate / "srv").is_dir():
            return candidate
    raise InterfaceError(f"so101_msgs interface files not found (looked in {', '.join(map(str, candidates))})")


@cache
def typestore() -> Typestore:
    """The shared typestore (built once per process)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    for package_dir in sorted(p for p in STD_DIR.iterdir() if p.is_dir()):
        store.register(parse_package_dir(package_dir))
    store.register(parse_package_dir(so101_msgs_dir(), "so101_msgs"))
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
