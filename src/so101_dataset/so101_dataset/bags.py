"""One rosbag2 (MCAP) per rendered episode, through the project's bag writer, stamped in sim time.

Topics (SPEC names): ``/joint_states`` and ``/joint_commands`` (sensor_msgs/JointState, rad),
``/cameras/<cam>/image_raw`` (rgb8, decoded from the episode's MP4) and ``/cameras/<cam>/camera_info``,
``/tf`` (the URDF's moving joints, the camera optical frames and the objects, per frame), ``/tf_static``
and ``/robot_description`` (latched, at t = 0), ``/sim/objects/<name>/pose`` (geometry_msgs/PoseStamped,
frame ``world``) and ``/clock``. Frame k is stamped t_k (the recorded timing resampled to the dataset rate,
s since the episode start) as ns of sim time, so ``so101 bag play`` / ``ros2 bag play --clock`` with
``use_sim_time`` and RViz replays the episode at its recorded pace.

Camera optical frames (z forward, x right, y down) come from the twin's camera poses with the episode's DR
camera jitter, recomputed by kinematics from the recorded state. Written under ``bags/.tmp/<unit>`` and
renamed when closed, so a crash leaves no torn bag under the final name. Chunks are zstd-compressed (raw
rgb8 at 640×480 is ≈ 0.9 MB per camera frame; ``bags.image_stride`` thins the images further).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.bag.metadata import qos_profile_yaml
from nodegraph.bag.writer import BagWriter
from nodegraph.images import image_fields
from nodegraph.interfaces.messages import make, serialize, time_message
from so101_core.episode_units import EPISODE_FILE, REPLAY_FILE
from so101_core.geometry import mat_to_quat_xyzw
from so101_core.lerobot_schema import image_key
from so101_core.robot_spec import optical_frame

from .config import DatasetConfig
from .errors import ExportError

WORLD = "world"
_OPTICAL = np.diag([1.0, -1.0, -1.0])  # MuJoCo camera (x right, y up, -z forward) → optical frame
LATCHED_QOS = qos_profile_yaml(durability="transient_local", depth=1)
DEFAULT_QOS = qos_profile_yaml()
CLOCK_QOS = qos_profile_yaml(reliability="best_effort", depth=1)


def _tf(stamp: Any, parent: str, child: str, pos: npt.ArrayLike, quat_xyzw: npt.ArrayLike) -> Any:
    x, y, z = (float(v) for v in np.asarray(pos, dtype=float))
    qx, qy, qz, qw = (float(v) for v in np.asarray(quat_xyzw, dtype=float))
    return make(
        "geometry_msgs/msg/TransformStamped",
        header=make("std_msgs/msg/Header", stamp=stamp, frame_id=parent),
        child_frame_id=child,
        transform=make(
            "geometry_msgs/msg/Transform",
            translation=make("geometry_msgs/msg/Vector3", x=x, y=y, z=z),
            rotation=make("geometry_msgs/msg/Quaternion", x=qx, y=qy, z=qz, w=qw),
        ),
    )


def decode_frames(path: Path) -> Iterator[np.ndarray]:
    """RGB frames (H, W, 3) uint8 of an MP4, in order."""
    import av

    with av.open(str(path)) as c:
        for frame in c.decode(video=0):
            yield frame.to_ndarray(format="rgb24")


def write_bag(unit: Path, out: Path, cfg: DatasetConfig, twin: Any | None = None) -> Path:
    """Write the bag of rendered unit ``unit`` to directory ``out`` (must not exist); returns ``out``."""
    from so101_core.description import load_urdf
    from so101_core.robot_spec import JOINT_NAMES

    meta = json.loads((unit / EPISODE_FILE).read_text())
    with np.load(unit / REPLAY_FILE) as z:
        t, q, action = z["t"], z["q"], z["action"]
        objects = {k.removeprefix("object_pose/"): z[k] for k in z.files if k.startswith("object_pose/")}
    cams = list(meta["cameras"])
    videos = {}
    for cam in cams:
        files = sorted((unit / "lerobot" / "videos" / image_key(cam)).glob("chunk-*/file-*.mp4"))
        if len(files) != 1:
            raise ExportError(f"{unit}: expected one video for {cam}, found {len(files)}")
        videos[cam] = files[0]
    own_twin = twin is None
    if twin is None:
        from so101_core.sim.randomization import DRConfig, load_dr_config
        from so101_core.sim.twin import Twin

        twin = Twin(dr=load_dr_config() if meta.get("visual_dr") else DRConfig.disabled())
    try:
        twin.reset(meta["provenance"]["render_seed"] if meta.get("visual_dr") else None)
        k_mats = {c: twin.camera_intrinsics(c, meta["width"], meta["height"]) for c in cams}
        urdf = load_urdf()
        tmp = out.parent / ".tmp" / out.name
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        custom = {"so101.episode": unit.name, "so101.task": meta["task"], "so101.source": meta["provenance"]["source"]}
        with BagWriter(tmp, custom_data=custom, compression="zstd", fsync=False, max_queue_bytes=1 << 30) as bag:
            topics = [
                ("/joint_states", "sensor_msgs/msg/JointState", DEFAULT_QOS),
                ("/joint_commands", "sensor_msgs/msg/JointState", DEFAULT_QOS),
                ("/tf", "tf2_msgs/msg/TFMessage", DEFAULT_QOS),
                ("/tf_static", "tf2_msgs/msg/TFMessage", LATCHED_QOS),
                ("/robot_description", "std_msgs/msg/String", LATCHED_QOS),
                ("/clock", "rosgraph_msgs/msg/Clock", CLOCK_QOS),
            ]
            topics += [(f"/sim/objects/{n}/pose", "geometry_msgs/msg/PoseStamped", DEFAULT_QOS) for n in objects]
            for c in cams:
                topics += [
                    (f"/cameras/{c}/image_raw", "sensor_msgs/msg/Image", DEFAULT_QOS),
                    (f"/cameras/{c}/camera_info", "sensor_msgs/msg/CameraInfo", DEFAULT_QOS),
                ]
            for name, typ, qos in topics:
                bag.add_topic(name, typ, qos)

            def put(topic: str, ns: int, msg: Any, typ: str) -> None:
                if not bag.write(topic, ns, serialize(msg, typ)):
                    raise ExportError(f"{out}: the bag writer dropped a {topic} message")

            zero = time_message(0)
            put("/robot_description", 0, make("std_msgs/msg/String", data=urdf.xml), "std_msgs/msg/String")
            static = [_tf(zero, WORLD, urdf.root, (0, 0, 0), (0, 0, 0, 1))]
            static += [
                _tf(zero, j.parent, j.child, j.transform()[:3, 3], mat_to_quat_xyzw(j.transform()[:3, :3]))
                for j in urdf.fixed_joints
            ]
            put("/tf_static", 0, make("tf2_msgs/msg/TFMessage", transforms=static), "tf2_msgs/msg/TFMessage")
            moving = {j.name: j for j in urdf.moving_joints}
            frames = {c: decode_frames(videos[c]) for c in cams}
            import mujoco

            cam_ids = {c: twin.index.cameras[c] for c in cams}
            for k in range(len(t)):
                ns = round(float(t[k]) * 1e9)
                stamp = time_message(ns)
                head = make("std_msgs/msg/Header", stamp=stamp, frame_id="")
                put("/clock", ns, make("rosgraph_msgs/msg/Clock", clock=stamp), "rosgraph_msgs/msg/Clock")
                for topic, values in (("/joint_states", q[k]), ("/joint_commands", action[k])):
                    msg = make("sensor_msgs/msg/JointState", header=head, name=list(JOINT_NAMES), position=values)
                    put(topic, ns, msg, "sensor_msgs/msg/JointState")
                twin.data.qpos[twin.index.qpos_adr] = q[k]
                for n, poses in objects.items():
                    a = twin.index.object_qpos_adr[n]
                    twin.data.qpos[a : a + 7] = poses[k]
                mujoco.mj_kinematics(twin.model, twin.data)
                mujoco.mj_camlight(twin.model, twin.data)
                values = urdf.joint_values({n: float(v) for n, v in zip(JOINT_NAMES, q[k], strict=True) if n in moving})
                tfs = []
                for n, v in values.items():
                    m = moving[n].transform(v)
                    tfs.append(_tf(stamp, moving[n].parent, moving[n].child, m[:3, 3], mat_to_quat_xyzw(m[:3, :3])))
                for c, cid in cam_ids.items():
                    rot = twin.data.cam_xmat[cid].reshape(3, 3) @ _OPTICAL
                    tfs.append(_tf(stamp, WORLD, optical_frame(c), twin.data.cam_xpos[cid], mat_to_quat_xyzw(rot)))
                for n, p in objects.items():
                    wxyz = p[k, 3:]
                    tfs.append(_tf(stamp, WORLD, n, p[k, :3], (wxyz[1], wxyz[2], wxyz[3], wxyz[0])))
                    pose = make(
                        "geometry_msgs/msg/Pose",
                        position=make("geometry_msgs/msg/Point", x=p[k, 0], y=p[k, 1], z=p[k, 2]),
                        orientation=make("geometry_msgs/msg/Quaternion", x=wxyz[1], y=wxyz[2], z=wxyz[3], w=wxyz[0]),
                    )
                    msg = make(
                        "geometry_msgs/msg/PoseStamped",
                        header=make("std_msgs/msg/Header", stamp=stamp, frame_id=WORLD),
                        pose=pose,
                    )
                    put(f"/sim/objects/{n}/pose", ns, msg, "geometry_msgs/msg/PoseStamped")
                put("/tf", ns, make("tf2_msgs/msg/TFMessage", transforms=tfs), "tf2_msgs/msg/TFMessage")
                for c in cams:
                    rgb = next(frames[c], None)
                    if rgb is None:
                        raise ExportError(f"{videos[c]}: fewer frames than the episode's {len(t)}")
                    if k % cfg.bag_image_stride:
                        continue
                    ch = make("std_msgs/msg/Header", stamp=stamp, frame_id=optical_frame(c))
                    h, w = rgb.shape[:2]
                    img = make("sensor_msgs/msg/Image", header=ch, **image_fields(rgb, "rgb8"))
                    put(f"/cameras/{c}/image_raw", ns, img, "sensor_msgs/msg/Image")
                    kk = k_mats[c]
                    info = make(
                        "sensor_msgs/msg/CameraInfo", header=ch, height=h, width=w, distortion_model="plumb_bob",
                        d=np.zeros(5), k=kk.reshape(-1), r=np.eye(3).reshape(-1),
                        p=np.hstack([kk, np.zeros((3, 1))]).reshape(-1),
                    )  # fmt: skip
                    put(f"/cameras/{c}/camera_info", ns, info, "sensor_msgs/msg/CameraInfo")
        os.replace(tmp, out)
        return out
    finally:
        if own_twin:
            twin.close()


def write_bags(
    units: Sequence[Path], bags_dir: Path, cfg: DatasetConfig, progress: Any = None, workers: int = 1
) -> list[Path]:
    """A bag per unit not yet bagged (resumable: complete bags are kept, partial ones redone), in ``workers``
    spawned processes (each with its own DR twin) when there is more than one to write."""
    bags_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(bags_dir / ".tmp", ignore_errors=True)
    targets = [bags_dir / unit.name for unit in units]
    todo = [(u, t) for u, t in zip(units, targets, strict=True) if not (t / "metadata.yaml").is_file()]
    done = len(units) - len(todo)
    n = max(1, min(workers, len(todo)))
    if n == 1 and todo:
        _init_bag_worker()
        try:
            for unit, target in todo:
                _bag_unit(str(unit), str(target), cfg)
                done += 1
                if progress:
                    progress("bags", done, len(units))
        finally:
            _close_bag_worker()
    elif todo:
        with ProcessPoolExecutor(n, mp_context=get_context("spawn"), initializer=_init_bag_worker) as pool:
            futs = [pool.submit(_bag_unit, str(u), str(t), cfg) for u, t in todo]
            try:
                for fut in as_completed(futs):
                    fut.result()
                    done += 1
                    if progress:
                        progress("bags", done, len(units))
            except BaseException:
                for f in futs:
                    f.cancel()
                raise
    if progress and not todo:
        progress("bags", len(units), len(units))
    return targets


_twin: Any = None  # a bag-writing process's DR twin (:func:`_init_bag_worker`)


def _init_bag_worker() -> None:
    global _twin
    from so101_core.sim.randomization import load_dr_config
    from so101_core.sim.twin import Twin

    _twin = Twin(dr=load_dr_config())


def _close_bag_worker() -> None:
    global _twin
    if _twin is not None:
        _twin.close()
        _twin = None


def _bag_unit(unit: str, target: str, cfg: DatasetConfig) -> str:
    """Write ``unit``'s bag to ``target`` (a partial one there is removed first), with this process's DR twin
    when the unit was rendered with visual DR (else a twin without DR)."""
    shutil.rmtree(target, ignore_errors=True)
    meta = json.loads((Path(unit) / EPISODE_FILE).read_text())
    write_bag(Path(unit), Path(target), cfg, _twin if meta.get("visual_dr") else None)
    return target
