"""The rclpy backend's field conversion against rosidl's type rules (rosidl design doc, "Interface definition
and language mappings"; rosidl_python's generated setters), for every field type the nodes use. No ROS 2
runtime can be installed here, so this pins the rules that decide what rclpy would send."""

from __future__ import annotations

import pytest
from nodegraph.transport.rclpy.fields import FieldTypeError, element_type, field_value, is_nested


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
