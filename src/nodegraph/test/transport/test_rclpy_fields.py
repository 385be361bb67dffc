"""The rclpy backend's field conversion against rosidl's type rules (rosidl design doc, "Interface definition
and language mappings"; rosidl_python's generated setters), for every field type the nodes use. No ROS 2
runtime can be installed here, so this pins the rules that decide what rclpy would send."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from nodegraph.interfaces import typestore
from nodegraph.interfaces.messages import make
from nodegraph.transport.rclpy.fields import FieldTypeError, element_type, field_value, is_nested
from rosbags.interfaces import Nodetype


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_a_byte_field_keeps_the_diagnostic_level(level: int) -> None:
    """DiagnosticStatus.level is ``byte`` (IDL octet): rosidl_python holds one ``bytes`` of length 1.
    set_message_fields' ``bytes(level)`` would be ``level`` zero bytes: WARN/ERROR/STALE read as OK."""
    assert field_value("octet", level) == bytes([level])
    assert field_value("octet", bytes([level])) == bytes([level])


@pytest.mark.parametrize("bad", [256, -1, True, b"ab", 1.0])
def test_a_byte_field_refuses_what_rosidl_refuses(bad: object) -> None:
    with pytest.raises(FieldTypeError):
        field_value("octet", bad)


def test_byte_sequences_are_lists_of_single_bytes() -> None:
    assert field_value("sequence<octet>", [1, 2]) == [b"\x01", b"\x02"]
    assert field_value("sequence<octet>", b"ab") == [b"a", b"b"]
    assert field_value("octet[2]", [0, 255]) == [b"\x00", b"\xff"]


def test_numbers_booleans_and_strings() -> None:
    assert field_value("double", 1) == 1.0 and isinstance(field_value("double", 1), float)
    assert field_value("float", 0.5) == 0.5
    assert field_value("int32", 7) == 7 and field_value("uint8", 255) == 255
    assert field_value("boolean", 1) is True
    assert field_value("string", "base_link") == "base_link"
    assert field_value("string<=4", "abcd") == "abcd"
    assert field_value("char", "x") == "x"
    for idl_type, value in (("uint8", 256), ("int8", -129), ("double", "1.0"), ("int32", 1.5), ("string", 3),
                            ("string<=2", "abc"), ("char", "xy")):  # fmt: skip
        with pytest.raises(FieldTypeError):
            field_value(idl_type, value)


def test_sequences_and_arrays() -> None:
    assert field_value("sequence<double>", [1, 2.5]) == [1.0, 2.5]
    assert field_value("sequence<string>", ("a", "b")) == ["a", "b"]
    assert field_value("double[3]", [0, 0, 1]) == [0.0, 0.0, 1.0]
    assert field_value("sequence<int32, 2>", [1, 2]) == [1, 2]
    with pytest.raises(FieldTypeError, match="exactly 3"):
        field_value("double[3]", [0.0, 1.0])
    with pytest.raises(FieldTypeError, match="at most 2"):
        field_value("sequence<int32, 2>", [1, 2, 3])
    assert element_type("sequence<diagnostic_msgs/KeyValue>") == ("sequence", "diagnostic_msgs/KeyValue", 0)
    assert element_type("string<=5[2]") == ("array", "string<=5", 2)
    assert is_nested("builtin_interfaces/Time") and not is_nested("double")


# The message types the nodes build (and what they nest), by the .msg → IDL mapping of the rosidl design doc:
# bool→boolean, byte→octet, char→uint8, float32→float, float64→double, string<=N, T[N], T[] → sequence<T>,
# T[<=N] → sequence<T, N>; a nested type is named pkg/Name.
NODE_TYPES = [
    "action_msgs/msg/GoalStatusArray", "builtin_interfaces/msg/Duration", "diagnostic_msgs/msg/DiagnosticArray",
    "geometry_msgs/msg/PoseStamped", "rcl_interfaces/msg/Log", "rcl_interfaces/msg/ParameterEvent",
    "rcl_interfaces/msg/ListParametersResult", "rcl_interfaces/msg/ParameterDescriptor", "rosgraph_msgs/msg/Clock",
    "sensor_msgs/msg/CameraInfo", "sensor_msgs/msg/Image", "sensor_msgs/msg/JointState", "std_msgs/msg/Bool",
    "std_msgs/msg/String", "tf2_msgs/msg/TFMessage", "trajectory_msgs/msg/JointTrajectory",
    "control_msgs/action/FollowJointTrajectory_Goal", "control_msgs/action/FollowJointTrajectory_Feedback",
    "control_msgs/action/FollowJointTrajectory_Result", "so101_msgs/action/GenerateDemos_Feedback",
]  # fmt: skip
_IDL_BASE = {"bool": "boolean", "byte": "octet", "char": "uint8", "float32": "float", "float64": "double"}


def _idl(desc: Any) -> str:
    kind, rest = desc
    if kind == Nodetype.NAME:
        package, _, name = rest.split("/")
        return f"{package}/{name}"
    if kind == Nodetype.BASE:
        base, bound = rest
        return f"{base}<={bound}" if base in ("string", "wstring") and bound else _IDL_BASE.get(base, base)
    elem, size = rest
    if kind == Nodetype.ARRAY:
        return f"{_idl(elem)}[{size}]"
    return f"sequence<{_idl(elem)}, {size}>" if size else f"sequence<{_idl(elem)}>"


def _python_type(idl_type: str) -> type:
    if idl_type == "octet":
        return bytes
    if idl_type == "boolean":
        return bool
    if idl_type in ("float", "double"):
        return float
    if idl_type.startswith(("string", "wstring")):
        return str
    return int


def _all_fields(type_name: str, seen: set[str]) -> list[tuple[str, str, Any]]:
    """``(type.field, IDL type, the typestore default value)`` of every primitive field, nested types too."""
    if type_name in seen:
        return []
    seen.add(type_name)
    sample = make(type_name)
    out: list[tuple[str, str, Any]] = []
    for name, desc in typestore().fielddefs[type_name][1]:
        idl_type = _idl(desc)
        shape = element_type(idl_type)
        elem = shape[1] if shape else idl_type
        if is_nested(elem):
            package, nested = elem.split("/")
            out += _all_fields(f"{package}/msg/{nested}", seen)
        else:
            value = getattr(sample, name)
            out.append((f"{type_name}.{name}", idl_type, value.tolist() if isinstance(value, np.ndarray) else value))
    return out


def test_every_primitive_field_the_nodes_use_converts_by_rosidl_rules() -> None:
    seen: set[str] = set()
    fields = [f for t in NODE_TYPES for f in _all_fields(t, seen)]
    kinds = {idl for _, idl, _ in fields}
    assert {"octet", "uint8", "boolean", "double", "float", "string", "int8", "uint32", "int64"} <= kinds
    assert any(k.startswith("sequence<") for k in kinds) and any(k.endswith("]") for k in kinds)
    for where, idl_type, default in fields:
        if idl_type == "octet":
            default = 3  # what the nodes pass (DiagnosticStatus.level = ERROR/WARN...)
        converted = field_value(idl_type, default)
        shape = element_type(idl_type)
        if shape is None:
            assert isinstance(converted, _python_type(idl_type)), where
            if idl_type == "octet":
                assert converted == b"\x03", where
        else:
            assert isinstance(converted, list), where
            assert all(isinstance(v, _python_type(shape[1])) for v in converted), where
            if shape[0] == "array":
                assert len(converted) == shape[2], where
