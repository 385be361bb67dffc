"""The sim node's cameras: publishers per camera and the rendering thread (MuJoCo offscreen, RGB + depth).

The stepping thread asks for frames (:meth:`SimCameras.request`); the rendering thread copies the state into
the visual scene under the sim lock (``update_scene`` only) and renders outside it, so that images never delay
``joint_states``. Frames the renderer cannot keep up with are skipped. The renderer (its GL context) lives and
dies on the rendering thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from nodegraph.graph.api import Message, Node
from so101_core.robot_spec import optical_frame
from so101_core.sim.twin import Twin

from so101_nodes import camera_messages


@dataclass
class CameraPublishers:
    """The topics of one camera: ``cameras/<name>/image_raw`` + ``camera_info`` (+ depth ones)."""

    name: str
    image: Any
    info: Any
    depth_image: Any | None
    depth_info: Any | None

    @classmethod
    def create(cls, node: Node, name: str, depth: bool) -> CameraPublishers:
        base = f"cameras/{name}"
        return cls(
            name=name,
            image=node.create_publisher("sensor_msgs/msg/Image", f"{base}/image_raw"),
            info=node.create_publisher("sensor_msgs/msg/CameraInfo", f"{base}/camera_info"),
            depth_image=node.create_publisher("sensor_msgs/msg/Image", f"{base}/depth/image_raw") if depth else None,
            depth_info=node.create_publisher("sensor_msgs/msg/CameraInfo", f"{base}/depth/camera_info")
            if depth
            else None,
        )


class SimCameras:
    """Renders ``names`` of ``twin`` at ``width`` x ``height`` px on its own thread when asked.

    Args:
        node: the sim node (publishers, logger).
        twin: the twin (shared with the stepping thread, guarded by ``lock``).
        lock: the sim lock.
        sim_time_ns: the sim clock (called under ``lock``).
        names: cameras to render.
        width / height: px.
        depth: also publish 16UC1 depth in mm.
        stop: set when the node closes.
        expected_end: true when the thread's end is part of a shutdown (then it is logged at debug level).
    """

    def __init__(
        self,
        node: Node,
        twin: Twin,
        lock: threading.Lock,
        sim_time_ns: Callable[[], int],
        names: tuple[str, ...],
        width: int,
        height: int,
        depth: bool,
        stop: threading.Event,
        expected_end: Callable[[], bool],
    ) -> None:
        self.node, self.twin, self.lock, self.sim_time_ns = node, twin, lock, sim_time_ns
        self.width, self.height, self.depth = width, height, depth
        self.stop, self.expected_end = stop, expected_end
        self.cameras = [CameraPublishers.create(node, name, depth) for name in names]
        self._request = threading.Event()
        self.thread = threading.Thread(target=self._run, name="sim-rendering", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def request(self) -> None:
        """Ask for one frame of every camera (skipped if the previous one is still rendering)."""
        self._request.set()

    def camera_info(self, stamp_ns: int, frame_id: str, camera: str) -> Message:
        """CameraInfo of ``camera`` at the published resolution: K from the fovy, P = [K | 0], no distortion."""
        k = self.twin.camera_intrinsics(camera, self.width, self.height)
        head = camera_messages.header(self.node, stamp_ns, frame_id)
        return camera_messages.camera_info(self.node, head, self.width, self.height, k)

    def _run(self) -> None:
        import mujoco

        twin = self.twin
        renderer: mujoco.Renderer | None = None
        try:
            renderer = mujoco.Renderer(twin.model, height=self.height, width=self.width)
            far = float(twin.model.stat.extent * twin.model.vis.map.zfar)
            while not self.stop.is_set():
                if not self._request.wait(0.1):
                    continue
                self._request.clear()
                for cam in self.cameras:
                    with self.lock:
                        renderer.update_scene(twin.data, camera=twin.index.cameras[cam.name])
                        stamp_ns = self.sim_time_ns()
                    rgb = renderer.render().copy()
                    depth = None
                    if self.depth:
                        renderer.enable_depth_rendering()
                        try:
                            d = renderer.render()
                        finally:
                            renderer.disable_depth_rendering()
                        mm = np.where((d > 0) & (d < 0.99 * far), np.round(d * 1000.0), 0)
                        depth = np.clip(mm, 0, 65535).astype(np.uint16)
                    self._publish(cam, stamp_ns, rgb, depth)
        except Exception as exc:
            (self.node.logger.debug if self.stop.is_set() or self.expected_end() else self.node.logger.error)(
                f"rendering thread ends: {type(exc).__name__}: {exc}"
            )
        finally:
            if renderer is not None:
                renderer.close()

    def _publish(self, cam: CameraPublishers, stamp_ns: int, rgb: np.ndarray, depth: np.ndarray | None) -> None:
        frame = optical_frame(cam.name)
        head = camera_messages.header(self.node, stamp_ns, frame)
        info = self.camera_info(stamp_ns, frame, cam.name)
        cam.image.publish(camera_messages.rgb_image(self.node, head, rgb))
        cam.info.publish(info)
        if depth is not None and cam.depth_image is not None and cam.depth_info is not None:
            cam.depth_image.publish(camera_messages.depth_image(self.node, head, depth))
            cam.depth_info.publish(info)
