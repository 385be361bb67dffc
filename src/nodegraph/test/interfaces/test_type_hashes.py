"""RIHS01 hashes equal the ones ROS 2 Jazzy publishes (from `ros2 topic info -v`, rmw_zenoh's design.md and
interface JSON files), including services and actions, where rosbags' own hash of ``char`` is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from nodegraph.interfaces import InterfaceError, interface_info, typestore
from nodegraph.interfaces.definitions import (
    DefinitionError,
    parse_action,
    parse_package_dir,
    parse_service,
)
from nodegraph.interfaces.hashing import rihs01
from rosbags.typesys import Stores, get_typestore

FIXTURES = Path(__file__).with_name("fixtures")

JAZZY_HASHES = {
    "std_msgs/msg/String": "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18",
    "sensor_msgs/msg/JointState": "RIHS01_a13ee3a330e346c9d87b5aa18d24e11690752bd33a0350f11c5882bc9179260e",
    "example_interfaces/srv/AddTwoInts": "RIHS01_e118de6bf5eeb66a2491b5bda11202e7b68f198d6f67922cf30364858239c81a",
    "action_msgs/msg/GoalStatusArray": "RIHS01_6c1684b00f177d37438febe6e709fc4e2b0d4248dca4854946f9ed8b30cda83e",
    "action_msgs/srv/CancelGoal": "RIHS01_573d8b0a534451d7bc2ac8c5ffde8ac14b8593b7001175d0cd6516dcbeb8689a",
    "std_srvs/srv/Trigger": "RIHS01_eeff2cd6fa5ad9d27cdf4dec64818317839b62f212a91e6b5304b634b2062c5f",
    "std_srvs/srv/SetBool": "RIHS01_abe9e4bb6b41b40e6789712c00ec8871923e089af3f667a79992a428cff2da0a",
    # /rosout and /parameter_events of a Jazzy talker (rmw_zenoh liveliness tokens)
    "rcl_interfaces/msg/Log": "RIHS01_e28ce254ca8abc06abf92773b74602cdbf116ed34fbaf294fb9f81da9f318eac",
    "rcl_interfaces/msg/ParameterEvent": "RIHS01_043e627780fcad87a22d225bc2a037361dba713fca6a6b9f4b869a5aa0393204",
    # the parameter services and ~/get_type_description: the Jazzy hashes as independent rmw_zenoh clients
    # publish them (tables in several public zenoh-ROS bridges agree)
    "rcl_interfaces/srv/ListParameters": "RIHS01_3e6062bfbb27bfb8730d4cef2558221f51a11646d78e7bb30a1e83afac3aad9d",
    "rcl_interfaces/srv/GetParameters": "RIHS01_bf9803d5c74cf989a5de3e0c2e99444599a627c7ff75f97b8c05b01003675cbc",
    "rcl_interfaces/srv/GetParameterTypes": "RIHS01_da199c878688b3e530bdfe3ca8f74cb9fa0c303101e980a9e8f260e25e1c80ca",
    "rcl_interfaces/srv/SetParameters": "RIHS01_56eed9a67e169f9cb6c1f987bc88f868c14a8fc9f743a263bc734c154015d7e0",
    "rcl_interfaces/srv/SetParametersAtomically": (
        "RIHS01_0e192ef259c07fc3c07a13191d27002222e65e00ccec653ca05e856f79285fcd"
    ),
    "rcl_interfaces/srv/DescribeParameters": "RIHS01_845b484d71eb0673dae682f2e3ba3c4851a65a3dcfb97bddd82c5b57e91e4cff",
    "type_description_interfaces/srv/GetTypeDescription": (
        "RIHS01_69b9c19c1021405984cc60dbbb1edceb147a6538b411d812ba6afabeed962cd5"
    ),
}


@pytest.mark.parametrize(("type_name", "expected"), sorted(JAZZY_HASHES.items()))
def test_standard_hashes_equal_jazzy(type_name: str, expected: str) -> None:
    assert interface_info(type_name).type_hash == expected


def test_action_part_hashes_equal_jazzy() -> None:
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register(parse_package_dir(FIXTURES / "action_tutorials_interfaces"))
    name = "action_tutorials_interfaces/action/Fibonacci"
    assert (
        rihs01(f"{name}_SendGoal", store.fielddefs)
        == "RIHS01_a0603060ed69fe2dfbd1a6f3b982a1749957ef346e4a4d2b311a05e305ec37bb"
    )
    assert (
        rihs01(f"{name}_FeedbackMessage", store.fielddefs)
        == "RIHS01_50fc26b9cac313652ecbeab3adf9b5414d59fd4d4d5f9058ddcc7525169927f1"
    )


def test_service_hash_needs_char_as_uint8() -> None:
    """rosbags hashes ``char`` as CHAR; ROS as uint8: only the latter gives Jazzy's service hashes."""
    store = typestore()
    assert store.hash_rihs01("example_interfaces/srv/AddTwoInts") != JAZZY_HASHES["example_interfaces/srv/AddTwoInts"]


def test_so101_msgs_load_with_their_parts() -> None:
    info = interface_info("so101_msgs/action/GenerateDemos")
    assert info.kind == "action"
    for part in ("Goal", "Result", "Feedback", "SendGoal_Request", "GetResult_Response", "FeedbackMessage"):
        assert info.part(part) in typestore().fielddefs
    assert interface_info("so101_msgs/srv/SolveIK").is_service
    assert interface_info("so101_msgs/srv/PlanMotion").dds_name == "so101_msgs::srv::dds_::PlanMotion_"
    assert interface_info("so101_msgs/action/GenerateDemos_SendGoal").is_service


@pytest.mark.parametrize("name", ["nope_msgs/msg/Nope", "sensor_msgs/msg/NoSuchType"])
def test_unknown_type_is_a_clear_error(name: str) -> None:
    with pytest.raises(InterfaceError, match="unknown interface type"):
        interface_info(name)


@pytest.mark.parametrize("name", ["", "JointState", "a/b/c/d", "sensor_msgs/xyz/JointState"])
def test_malformed_type_name_is_a_clear_error(name: str) -> None:
    with pytest.raises(InterfaceError, match="malformed interface name"):
        interface_info(name)


def test_malformed_definitions_are_clear_errors() -> None:
    with pytest.raises(DefinitionError, match="expected 2 sections"):
        parse_service("pkg", "Broken", "int32 a\n")
    with pytest.raises(DefinitionError, match="expected 3 sections"):
        parse_action("pkg", "Broken", "int32 a\n---\nint32 b\n")
    with pytest.raises(DefinitionError, match="cannot parse"):
        parse_service("pkg", "Broken", "int32[ a\n---\n")
