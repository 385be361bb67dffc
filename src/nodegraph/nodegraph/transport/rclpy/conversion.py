"""Names, QoS and arrays between the node interface and rclpy/rosidl_python."""

from __future__ import annotations

import array
import functools
import importlib
from typing import Any

import numpy as np
from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from nodegraph.graph.qos import QoS

_INFINITE_NS = 2**63 - 1  # RMW_DURATION_INFINITE

# pkg/action/Name_<suffix> → attribute path on the generated action class
_ACTION_PARTS = {
    "Goal": ("Goal",),
    "Result": ("Result",),
    "Feedback": ("Feedback",),
    "FeedbackMessage": ("Impl", "FeedbackMessage"),
    "SendGoal": ("Impl", "SendGoalService"),
    "SendGoal_Request": ("Impl", "SendGoalService", "Request"),
    "SendGoal_Response": ("Impl", "SendGoalService", "Response"),
    "GetResult": ("Impl", "GetResultService"),
    "GetResult_Request": ("Impl", "GetResultService", "Request"),
    "GetResult_Response": ("Impl", "GetResultService", "Response"),
}


class InterfaceNotInstalledError(LookupError):
    """No generated Python class for an interface name (its package is not installed for rclpy)."""


def _generated(pkg: str, kind: str, name: str) -> Any:
    """``pkg.kind.Name`` of a rosidl-generated package (what rosidl_runtime_py's get_message/service/action do)."""
    try:
        module = importlib.import_module(f"{pkg}.{kind}")
    except ImportError as exc:
        raise InterfaceNotInstalledError(
            f"{pkg}/{kind}/{name}: package {pkg!r} has no generated Python interfaces here ({exc}); on the rclpy "
            "backend every interface package must be installed (scripts/setup generates the ones no wheel has)"
        ) from exc
    cls = getattr(module, name, None)
    if cls is None:
        raise InterfaceNotInstalledError(f"{pkg}/{kind}/{name}: {pkg}.{kind} has no {name!r}")
    return cls


@functools.cache
def interface_type(type_name: str) -> Any:
    """The generated class of ``pkg/msg/Name`` (or ``pkg/Name``), ``pkg/srv/Name[_Request|_Response]``,
    ``pkg/action/Name[_Goal|_Result|_Feedback|...]``: the same names the zenoh backend accepts."""
    parts = type_name.strip().strip("/").split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or parts[1] not in ("msg", "srv", "action") or not all(parts):
        raise ValueError(f"malformed interface name {type_name!r}: expected pkg/msg|srv|action/Name")
    pkg, kind, name = parts
    if kind == "msg":
        return _generated(pkg, "msg", name)
    base, _, suffix = name.partition("_")
    if kind == "srv":
        service = _generated(pkg, "srv", base)
        if suffix in ("", "Request", "Response"):
            return getattr(service, suffix) if suffix else service
    else:
        action = _generated(pkg, "action", base)
        if not suffix:
            return action
        if suffix in _ACTION_PARTS:
            return functools.reduce(getattr, _ACTION_PARTS[suffix], action)
    raise ValueError(f"{type_name!r}: {pkg}/{kind}/{base} has no part {suffix!r}")


def to_qos_profile(qos: QoS) -> QoSProfile:
    """Our ``QoS`` as an rclpy ``QoSProfile`` (deadline and liveliness stay at their defaults)."""
    profile = QoSProfile(
        history=HistoryPolicy.KEEP_LAST if qos.history == "keep_last" else HistoryPolicy.KEEP_ALL,
        depth=qos.depth,
        reliability=(ReliabilityPolicy.RELIABLE if qos.reliability == "reliable" else ReliabilityPolicy.BEST_EFFORT),
        durability=(
            DurabilityPolicy.TRANSIENT_LOCAL if qos.durability == "transient_local" else DurabilityPolicy.VOLATILE
        ),
    )
    if qos.lifespan_ns:
        profile.lifespan = Duration(nanoseconds=qos.lifespan_ns)
    return profile


def from_qos_profile(profile: Any) -> QoS:
    """An rclpy ``QoSProfile`` as our ``QoS`` (an unset or infinite lifespan is 0)."""
    lifespan = int(profile.lifespan.nanoseconds)
    return QoS(
        lifespan_ns=lifespan if 0 < lifespan < _INFINITE_NS else 0,
        depth=int(profile.depth),
        reliability="best_effort" if profile.reliability == ReliabilityPolicy.BEST_EFFORT else "reliable",
        durability="transient_local" if profile.durability == DurabilityPolicy.TRANSIENT_LOCAL else "volatile",
        history="keep_all" if profile.history == HistoryPolicy.KEEP_ALL else "keep_last",
    )


def typed_array(typecode: str, value: Any) -> array.array[Any]:
    """``value`` (numpy array or bytes, which count as uint8 values) as an ``array.array`` of ``typecode``."""
    if isinstance(value, bytes | bytearray | memoryview):
        value = np.frombuffer(value, dtype=np.uint8)
    out: array.array[Any] = array.array(typecode)
    out.frombytes(np.ascontiguousarray(value, dtype=np.dtype(typecode)).reshape(-1).tobytes())
    return out
