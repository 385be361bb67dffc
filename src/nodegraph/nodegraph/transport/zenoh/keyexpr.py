"""rmw_zenoh_cpp's key expressions, liveliness tokens, QoS strings and GIDs (see notes/rmw_zenoh_conventions.md).

Data key: ``<domain>/<name without outer '/'>/<dds type>/<RIHS01 hash>``.
Node token: ``@ros2_lv/<domain>/<zid>/<nid>/<nid>/NN/<enclave>/<namespace>/<node>``.
Endpoint token: ``@ros2_lv/<domain>/<zid>/<nid>/<eid>/<MP|MS|SS|SC>/<enclave>/<namespace>/<node>/<name>/
<type>/<hash>/<qos>``.
Names inside tokens are mangled ('/' → '%').
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import xxhash

from nodegraph.graph.qos import QoS

ADMIN_SPACE = "@ros2_lv"
EntityKind = Literal["NN", "MP", "MS", "SS", "SC"]

_RELIABILITY = {"reliable": 1, "best_effort": 2}
_DURABILITY = {"transient_local": 1, "volatile": 2}
_HISTORY = {"keep_last": 1, "keep_all": 2}
_DEFAULT_DEPTH = 42


def mangle(name: str) -> str:
    return name.replace("/", "%")


def demangle(name: str) -> str:
    return name.replace("%", "/")


def data_key(domain_id: int, name: str, dds_type: str, type_hash: str) -> str:
    """Key expression of a topic or service (``name`` fully qualified)."""
    return f"{domain_id}/{name.strip('/')}/{dds_type}/{type_hash}"


def qos_to_keyexpr(qos: QoS) -> str:
    """rmw_zenoh's QoS string; values equal to its defaults are left empty."""
    reliability = "" if qos.reliability == "reliable" else str(_RELIABILITY[qos.reliability])
    durability = "" if qos.durability == "volatile" else str(_DURABILITY[qos.durability])
    history = "" if qos.history == "keep_last" else str(_HISTORY[qos.history])
    depth = "" if qos.depth in (0, _DEFAULT_DEPTH) else str(qos.depth)
    lifespan = "," if not qos.lifespan_ns else f"{qos.lifespan_ns // 1_000_000_000},{qos.lifespan_ns % 1_000_000_000}"
    return f"{reliability}:{durability}:{history},{depth}:,:{lifespan}:,,"


def keyexpr_to_qos(text: str) -> QoS:
    """Inverse of ``qos_to_keyexpr`` (deadline and liveliness are ignored)."""
    parts = text.split(":")
    if len(parts) != 6:
        raise ValueError(f"malformed QoS string {text!r}")
    history_text, _, depth_text = parts[2].partition(",")
    reliability = {v: k for k, v in _RELIABILITY.items()}.get(int(parts[0] or 1), "reliable")
    durability = {v: k for k, v in _DURABILITY.items()}.get(int(parts[1] or 2), "volatile")
    history = {v: k for k, v in _HISTORY.items()}.get(int(history_text or 1), "keep_last")
    lifespan_s, _, lifespan_ns = parts[4].partition(",")
    return QoS(
        lifespan_ns=int(lifespan_s or 0) * 1_000_000_000 + int(lifespan_ns or 0),
        depth=int(depth_text or _DEFAULT_DEPTH),
        reliability=reliability,  # type: ignore[arg-type]
        durability=durability,  # type: ignore[arg-type]
        history=history,  # type: ignore[arg-type]
    )


def gid(token_key: str) -> bytes:
    """16-byte GID of an entity: XXH3-128 of its liveliness key, low 64 bits first, little-endian."""
    return xxhash.xxh3_128_intdigest(token_key.encode()).to_bytes(16, "little")


@dataclass(frozen=True)
class NodeToken:
    domain_id: int
    zid: str
    node_id: int
    namespace: str
    node_name: str
    enclave: str = "/"

    def key(self) -> str:
        ns = mangle(self.namespace or "/")
        return (
            f"{ADMIN_SPACE}/{self.domain_id}/{self.zid}/{self.node_id}/{self.node_id}/NN/"
            f"{mangle(self.enclave)}/{ns}/{self.node_name}"
        )


@dataclass(frozen=True)
class EndpointToken:
    node: NodeToken
    entity_id: int
    kind: EntityKind
    name: str
    dds_type: str
    type_hash: str
    qos: QoS

    def key(self) -> str:
        n = self.node
        return (
            f"{ADMIN_SPACE}/{n.domain_id}/{n.zid}/{n.node_id}/{self.entity_id}/{self.kind}/"
            f"{mangle(n.enclave)}/{mangle(n.namespace or '/')}/{n.node_name}/{mangle(self.name)}/"
            f"{self.dds_type}/{self.type_hash}/{qos_to_keyexpr(self.qos)}"
        )


@dataclass(frozen=True)
class ParsedToken:
    """A liveliness token seen on the graph."""

    zid: str
    node_id: int
    entity_id: int
    kind: str
    namespace: str
    node_name: str
    name: str = ""
    dds_type: str = ""
    type_hash: str = ""
    qos: QoS | None = None


def parse_token(key: str) -> ParsedToken | None:
    """Parse a liveliness key; ``None`` when it is not a ROS 2 graph token."""
    parts = key.split("/")
    if len(parts) < 9 or parts[0] != ADMIN_SPACE or parts[5] not in ("NN", "MP", "MS", "SS", "SC"):
        return None
    try:
        node_id, entity_id = int(parts[3]), int(parts[4])
    except ValueError:
        return None
    token = ParsedToken(parts[2], node_id, entity_id, parts[5], demangle(parts[7]), parts[8])
    if parts[5] == "NN":
        return token
    if len(parts) < 13:
        return None
    try:
        qos = keyexpr_to_qos("/".join(parts[12:]))
    except ValueError:
        return None
    return ParsedToken(
        token.zid, node_id, entity_id, parts[5], token.namespace, token.node_name,
        demangle(parts[9]), parts[10], parts[11], qos,
    )  # fmt: skip


def dds_to_ros_type(dds_type: str) -> str:
    """``sensor_msgs::msg::dds_::JointState_`` → ``sensor_msgs/msg/JointState``."""
    pkg, kind, _, short = dds_type.split("::")
    return f"{pkg}/{kind}/{short.removesuffix('_')}"
