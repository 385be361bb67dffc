"""rosbag2 ``metadata.yaml`` as ROS 2 Jazzy writes it (metadata version 9) and QoS profile strings.

Version 9 stores ``offered_qos_profiles`` in metadata.yaml as a YAML sequence with enum *names*
(``keep_last``, ``reliable``...); the MCAP channel metadata keeps the same list as a YAML *string*
(key ``offered_qos_profiles``) next to ``topic_type_hash`` (RIHS01), as rosbag2_storage_mcap does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nodegraph.bag.errors import BagArgumentError, BagFormatError
from nodegraph.graph.qos import QoS

ROSBAG2_VERSION = 9
ROS_DISTRO = "jazzy"
STORAGE_ID = "mcap"
METADATA_FILE = "metadata.yaml"
_INFINITE = {"sec": 9223372036, "nsec": 854775807}  # RMW_DURATION_INFINITE
_CHOICES = {
    "history": ("keep_last", "keep_all", "system_default"),
    "reliability": ("reliable", "best_effort", "system_default"),
    "durability": ("volatile", "transient_local", "system_default"),
}


@dataclass(frozen=True)
class TopicStats:
    """One topic of a bag: name, type, QoS (YAML string), RIHS01 hash and message count."""

    name: str
    type: str
    message_count: int = 0
    serialization_format: str = "cdr"
    offered_qos_profiles: str = ""
    type_description_hash: str = ""


@dataclass(frozen=True)
class FileStats:
    """One storage file: path relative to the bag directory, first stamp (ns), duration (ns), count."""

    path: str
    starting_time_ns: int
    duration_ns: int
    message_count: int


def qos_profile_yaml(
    *,
    reliability: str = "reliable",
    durability: str = "volatile",
    history: str = "keep_last",
    depth: int = 10,
    lifespan_ns: int = 0,
) -> str:
    """The ``offered_qos_profiles`` YAML string of one publisher with these policies (infinite deadline and
    lease; ``lifespan_ns`` 0 = infinite)."""
    for key, value in (("reliability", reliability), ("durability", durability), ("history", history)):
        if value not in _CHOICES[key]:
            raise BagArgumentError(f"QoS {key} {value!r} not one of {_CHOICES[key]}")
    profile = {
        "history": history,
        "depth": int(depth),
        "reliability": reliability,
        "durability": durability,
        "deadline": dict(_INFINITE),
        "lifespan": {"sec": lifespan_ns // 1_000_000_000, "nsec": lifespan_ns % 1_000_000_000}
        if lifespan_ns
        else dict(_INFINITE),
        "liveliness": "automatic",
        "liveliness_lease_duration": dict(_INFINITE),
        "avoid_ros_namespace_conventions": False,
    }
    return yaml.safe_dump([profile], sort_keys=False, default_flow_style=False).strip()


def offered_qos_yaml(profiles: Sequence[QoS]) -> str:
    """The ``offered_qos_profiles`` YAML string of a topic's publishers, one profile each, as rosbag2 writes it."""
    if not profiles:
        return ""
    entries = [
        yaml.safe_load(qos_profile_yaml(reliability=q.reliability, durability=q.durability, history=q.history,
                                        depth=q.depth, lifespan_ns=q.lifespan_ns))[0]
        for q in profiles
    ]  # fmt: skip
    return yaml.safe_dump(entries, sort_keys=False, default_flow_style=False).strip()


def playback_qos(text: str, default: QoS = QoS()) -> QoS:
    """The QoS to replay a topic with, from its recorded ``offered_qos_profiles``, as ``ros2 bag play`` adapts
    it: transient_local when every recorded publisher offered it, best_effort when every one did, the largest
    depth; ``default`` when nothing was recorded."""
    profiles = parse_qos_yaml(text)
    if not profiles:
        return default
    durable = all(p.get("durability") == "transient_local" for p in profiles)
    best_effort = all(p.get("reliability") == "best_effort" for p in profiles)
    depth = max(int(p.get("depth", 0) or 0) for p in profiles) or default.depth
    return QoS(
        depth=depth,
        reliability="best_effort" if best_effort else "reliable",
        durability="transient_local" if durable else "volatile",
    )


def parse_qos_yaml(text: str) -> list[dict[str, Any]]:
    """The list of QoS profiles in an ``offered_qos_profiles`` string ('' → []); BagFormatError if bad."""
    if not text.strip():
        return []
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BagFormatError(f"offered_qos_profiles is not YAML: {exc}") from None
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BagFormatError(f"offered_qos_profiles must be a YAML list of mappings, got {text!r}")
    return value


def _qos_field(value: Any) -> str:
    """Channel-metadata form (YAML string) of a metadata.yaml ``offered_qos_profiles`` (list or string)."""
    if isinstance(value, str):
        return value
    if not value:
        return ""
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False).strip()


def build_metadata(
    *,
    files: Sequence[FileStats],
    topics: Sequence[TopicStats],
    compression_format: str = "",
    compression_mode: str = "",
    custom_data: Mapping[str, str] | None = None,
    ros_distro: str = ROS_DISTRO,
) -> dict[str, Any]:
    """The ``rosbag2_bagfile_information`` mapping (version 9, storage ``mcap``)."""
    counted = [f for f in files if f.message_count]
    start = min((f.starting_time_ns for f in counted), default=0)
    end = max((f.starting_time_ns + f.duration_ns for f in counted), default=0)
    return {
        "version": ROSBAG2_VERSION,
        "storage_identifier": STORAGE_ID,
        "duration": {"nanoseconds": max(0, end - start)},
        "starting_time": {"nanoseconds_since_epoch": start},
        "message_count": sum(f.message_count for f in files),
        "topics_with_message_count": [
            {
                "topic_metadata": {
                    "name": t.name,
                    "type": t.type,
                    "serialization_format": t.serialization_format,
                    "offered_qos_profiles": parse_qos_yaml(t.offered_qos_profiles),
                    "type_description_hash": t.type_description_hash,
                },
                "message_count": t.message_count,
            }
            for t in topics
        ],
        "compression_format": compression_format,
        "compression_mode": compression_mode,
        "relative_file_paths": [f.path for f in files],
        "files": [
            {
                "path": f.path,
                "starting_time": {"nanoseconds_since_epoch": f.starting_time_ns},
                "duration": {"nanoseconds": f.duration_ns},
                "message_count": f.message_count,
            }
            for f in files
        ],
        "custom_data": dict(custom_data) if custom_data else None,
        "ros_distro": ros_distro,
    }


def dump_metadata(info: Mapping[str, Any]) -> str:
    """metadata.yaml text of a ``rosbag2_bagfile_information`` mapping."""
    return yaml.safe_dump({"rosbag2_bagfile_information": dict(info)}, sort_keys=False, default_flow_style=False)


def write_metadata(bag_dir: Path, info: Mapping[str, Any], *, fsync: bool = False) -> None:
    """Write ``bag_dir/metadata.yaml`` atomically (temp file + rename)."""
    target = bag_dir / METADATA_FILE
    tmp = bag_dir / f".{METADATA_FILE}.tmp"
    with tmp.open("w", encoding="utf-8") as stream:
        stream.write(dump_metadata(info))
        if fsync:
            stream.flush()
            os.fsync(stream.fileno())
    os.replace(tmp, target)


def read_metadata(bag_dir: Path) -> dict[str, Any]:
    """The ``rosbag2_bagfile_information`` mapping of ``bag_dir/metadata.yaml``; BagFormatError if bad."""
    path = bag_dir / METADATA_FILE
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BagFormatError(f"{path}: cannot read metadata: {exc}") from None
    info = document.get("rosbag2_bagfile_information") if isinstance(document, dict) else None
    if not isinstance(info, dict):
        raise BagFormatError(f"{path}: no 'rosbag2_bagfile_information' mapping")
    storage = info.get("storage_identifier", "")
    if storage != STORAGE_ID:
        raise BagFormatError(f"{path}: storage {storage!r} is not supported (only 'mcap')")
    paths = info.get("relative_file_paths")
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise BagFormatError(f"{path}: 'relative_file_paths' must be a list of file names")
    return info


def topics_from_metadata(info: Mapping[str, Any]) -> list[TopicStats]:
    """The topics listed in a ``rosbag2_bagfile_information`` mapping."""
    topics = []
    for entry in info.get("topics_with_message_count") or []:
        meta = entry.get("topic_metadata", {})
        topics.append(
            TopicStats(
                name=str(meta.get("name", "")),
                type=str(meta.get("type", "")),
                message_count=int(entry.get("message_count", 0)),
                serialization_format=str(meta.get("serialization_format", "cdr")),
                offered_qos_profiles=_qos_field(meta.get("offered_qos_profiles", "")),
                type_description_hash=str(meta.get("type_description_hash", "")),
            )
        )
    return topics
