"""Robot description (core library, no transport): the SO-101 URDF and its forward kinematics (numpy)."""

from so101_core.description.urdf import (
    UrdfError,
    UrdfJoint,
    UrdfModel,
    default_urdf_path,
    load_urdf,
    parse_urdf,
    rpy_to_matrix,
)

__all__ = [
    "UrdfError",
    "UrdfJoint",
    "UrdfModel",
    "default_urdf_path",
    "load_urdf",
    "parse_urdf",
    "rpy_to_matrix",
]
