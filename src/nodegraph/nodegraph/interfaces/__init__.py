"""ROS 2 interface definitions at run time: the rosbags typestore (Jazzy + extras + so101_msgs) and RIHS01 hashes."""

from nodegraph.interfaces.typestore import InterfaceError, InterfaceInfo, interface_info, typestore

__all__ = ["InterfaceError", "InterfaceInfo", "interface_info", "typestore"]
