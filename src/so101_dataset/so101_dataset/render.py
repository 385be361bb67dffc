"""Kinematic replay of a recorded episode through the twin's cameras, all cameras in one render pass.

Per frame the recorded joint positions (6,) rad and object poses (7,) (xyz m + quaternion wxyz) are written
into ``MjData`` and only kinematics run (``mj_kinematics`` + ``mj_comPos`` + ``mj_camlight``; no physics).
The episode's visual randomization (light intensity and tint, robot/object/mat colours, camera jitter) comes
from its DR seed through :meth:`Twin.reset`, so a demo renders as the generator saw it; :func:`visual_dr_record`
is what gets recorded beside the episode.

Why not ``mujoco.Renderer``: it renders one camera per call, with one ``glReadPixels`` each (a GPU→CPU sync),
so three cameras cost three round trips. :class:`TiledRenderer` draws every camera of ``frames_per_pass``
consecutive frames into viewports of one offscreen buffer (a grid: cameras across, frames down) and reads
it back once. The scene's geometry is built once per frame (``mjv_updateScene``); per camera only the camera
and the head light are updated. Same model, same data, same pixels (tested in one process and across fresh
processes; one CI run saw pixels differ between a long-lived process and a fresh one, by an amount not
recorded and for a reason not found: the Ray test now compares within codec noise and reports the size).

OpenGL: ``MUJOCO_GL`` (egl: NVIDIA EGL on the GPU machine, Mesa llvmpipe on CPU; or osmesa) is fixed when
``mujoco`` is first imported, so worker processes set it before importing (see :func:`select_gl`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from so101_core.arrays import F64

from .errors import RenderError

U8 = npt.NDArray[np.uint8]
READBACKS = ("rgb", "rgba", "bgra")  # mjr_readPixels (GL_RGB) | glReadPixels in GL_RGBA | GL_BGRA, 3 channels kept


def select_gl(preference: str) -> str:
    """Set ``MUJOCO_GL`` before mujoco is imported (``auto`` keeps the environment's choice, default egl)."""
    if "mujoco" in sys.modules:
        return os.environ.get("MUJOCO_GL", "")
    if preference == "auto":
        os.environ.setdefault("MUJOCO_GL", "egl")
    else:
        os.environ["MUJOCO_GL"] = preference
    return os.environ["MUJOCO_GL"]


def gl_renderer_name() -> str:
    """``GL_VENDOR / GL_RENDERER`` of the current OpenGL context ('' when PyOpenGL cannot say): which GPU, or which
    software rasterizer (Mesa's llvmpipe), rendered. Recorded with every unit: a GPU figure is only one if it says
    the GPU's name."""
    try:
        from OpenGL import GL

        return " / ".join(bytes(GL.glGetString(k)).decode() for k in (GL.GL_VENDOR, GL.GL_RENDERER))
    except Exception:  # no PyOpenGL, or a platform it does not know (PYOPENGL_PLATFORM unset for EGL)
        return ""


@dataclass
class RenderTimes:
    """Seconds spent per phase, summed over ``frames`` frames (all cameras of a frame count once)."""

    scene_s: float = 0.0  # state write + kinematics + mjv_updateScene / updateCamera
    draw_s: float = 0.0  # mjr_render calls (GL command submission)
    readback_s: float = 0.0  # mjr_readPixels (waits for the GPU) + vertical flip
    frames: int = 0

    def add(self, other: RenderTimes) -> None:
        self.scene_s += other.scene_s
        self.draw_s += other.draw_s
        self.readback_s += other.readback_s
        self.frames += other.frames


@dataclass(frozen=True)
class Replay:
    """One episode resampled to the dataset rate: F frames at times ``t`` (F,) s.

    ``q`` (F, 6) rad measured joints, ``action`` (F, 6) rad commanded targets, ``objects`` name → (F, 7).
    """

    t: F64
    q: F64
    action: F64
    objects: dict[str, F64] = field(default_factory=dict)

    @property
    def frames(self) -> int:
        return len(self.t)


def resample(t: F64, q: F64, action: F64, objects: dict[str, F64], hz: float, fps: int) -> Replay:
    """Frames k/fps for k while k/fps <= the last sample; each takes the latest sample at or before it."""
    if abs(hz - fps) < 1e-9:
        return Replay(t - t[0], q, action, dict(objects))
    rel = t - t[0]
    n = int(np.floor(rel[-1] * fps + 1e-9)) + 1
    ft = np.arange(n, dtype=np.float64) / fps
    idx = np.clip(np.searchsorted(rel, ft + 1e-9, side="right") - 1, 0, len(t) - 1)
    return Replay(ft, q[idx], action[idx], {k: v[idx] for k, v in objects.items()})


class TiledRenderer:
    """Renders ``cameras`` (twin camera ids) of up to ``frames_per_pass`` frames into one offscreen buffer.

    ``frames_per_pass`` may be lowered later (never above the capacity it was built with); ``readback`` (one of
    :data:`READBACKS`) may change between passes: the same pixels each way (tested).

    The buffer is (frames_per_pass·H, ncam·W, 3) uint8; :meth:`render` returns it as a top-down view
    ``(n, H, ncam·W, 3)``; camera k of frame i is ``out[i, :, k*W:(k+1)*W]``. The returned array is reused
    by the next call: copy what must outlive it.
    """

    def __init__(
        self,
        model: Any,
        width: int,
        height: int,
        camera_ids: Sequence[int],
        *,
        shadows: bool = True,
        frames_per_pass: int = 1,
        readback: str = "rgb",
    ) -> None:
        import mujoco

        if readback not in READBACKS:
            raise RenderError(f"readback must be one of {READBACKS}, got {readback!r}")
        self._mj = mujoco
        self.readback = readback
        self.model = model
        self.width, self.height = width, height
        self.ncam = len(camera_ids)
        self.frames_per_pass = frames_per_pass  # frames per pass now (≤ capacity)
        self.capacity = frames_per_pass  # rows of the buffer
        bw, bh = width * self.ncam, height * frames_per_pass
        model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), bw)
        model.vis.global_.offheight = max(int(model.vis.global_.offheight), bh)
        try:
            self._gl = mujoco.GLContext(bw, bh)
            self._gl.make_current()
            self._ctx = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        except Exception as exc:  # no EGL/OSMesa: name the backend
            raise RenderError(
                f"cannot create an OpenGL context (MUJOCO_GL={os.environ.get('MUJOCO_GL')}): {exc}"
            ) from exc
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._ctx)
        self.gl_renderer = gl_renderer_name()
        if self._ctx.offWidth < bw or self._ctx.offHeight < bh:
            raise RenderError(f"offscreen buffer {self._ctx.offWidth}x{self._ctx.offHeight} < {bw}x{bh} requested")
        self._scene = mujoco.MjvScene(model, maxgeom=10000)
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadows
        self._opt = mujoco.MjvOption()
        self._pert = mujoco.MjvPerturb()
        self._cams = []
        for cid in camera_ids:
            cam = mujoco.MjvCamera()
            cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
            cam.fixedcamid = int(cid)
            self._cams.append(cam)
        self._rects = [
            [mujoco.MjrRect(k * width, (frames_per_pass - 1 - i) * height, width, height) for k in range(self.ncam)]
            for i in range(frames_per_pass)
        ]
        self._buf = np.empty((bh, bw, 3), dtype=np.uint8)  # mjr_readPixels' (GL_RGB)
        self._buf4: U8 | None = None  # glReadPixels' in GL_RGBA / GL_BGRA, made on the first such readback
        self._out = np.empty((bh, bw, 3), dtype=np.uint8)
        self.times = RenderTimes()

    def render(self, data: Any, set_state: Any, count: int) -> U8:
        """Render ``count`` (≤ frames_per_pass) frames; ``set_state(i)`` writes frame i's state into ``data``
        (kinematics included). Returns (count, H, ncam·W, 3) uint8, top row first."""
        mj = self._mj
        if not 1 <= count <= self.capacity:
            raise RenderError(f"count must be 1..{self.capacity}, got {count}")
        self._gl.make_current()
        t0 = time.perf_counter()
        draw = 0.0
        for i in range(count):
            set_state(i)
            for k, cam in enumerate(self._cams):
                if k == 0:
                    mj.mjv_updateScene(
                        self.model, data, self._opt, self._pert, cam, mj.mjtCatBit.mjCAT_ALL, self._scene
                    )
                else:
                    mj.mjv_updateCamera(self.model, data, cam, self._scene)
                mj.mjv_makeLights(self.model, data, self._scene)
                d0 = time.perf_counter()
                mj.mjr_render(self._rects[i][k], self._scene, self._ctx)
                draw += time.perf_counter() - d0
        t1 = time.perf_counter()
        h = count * self.height
        rect = mj.MjrRect(0, (self.capacity - count) * self.height, self.width * self.ncam, h)
        out = self._out[:h]
        if self.readback == "rgb":
            buf = self._buf[:h]
            mj.mjr_readPixels(buf, None, rect, self._ctx)
            np.copyto(out, buf[::-1])
        else:
            if self._buf4 is None:
                self._buf4 = np.empty((*self._buf.shape[:2], 4), dtype=np.uint8)
            buf4 = self._buf4[:h]
            self._read_four_channels(rect, buf4)
            np.copyto(out, buf4[::-1, :, 2::-1] if self.readback == "bgra" else buf4[::-1, :, :3])
        t2 = time.perf_counter()
        self.times.add(RenderTimes(t1 - t0 - draw, draw, t2 - t1, count))
        return out.reshape(count, self.height, self.width * self.ncam, 3)

    def _read_four_channels(self, rect: Any, buf: U8) -> None:
        """What ``mjr_readPixels`` does (resolve the multisampled buffer, read it), in 4 channels: ``GL_RGBA`` or
        ``GL_BGRA`` is the driver's copy without a per-pixel repack to 3 bytes."""
        from OpenGL import GL

        x, y, w, h = rect.left, rect.bottom, rect.width, rect.height
        ctx = self._ctx
        if ctx.offSamples:  # multisampled: resolve into the plain buffer first
            GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, ctx.offFBO)
            GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, ctx.offFBO_r)
            GL.glBlitFramebuffer(x, y, x + w, y + h, x, y, x + w, y + h, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
            GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, ctx.offFBO_r)
        else:
            GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, ctx.offFBO)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        fmt = GL.GL_BGRA if self.readback == "bgra" else GL.GL_RGBA
        GL.glReadPixels(x, y, w, h, fmt, GL.GL_UNSIGNED_BYTE, buf)
        self._mj.mjr_setBuffer(self._mj.mjtFramebuffer.mjFB_OFFSCREEN, ctx)  # MuJoCo's own binding back

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.free()
            self._ctx = None
        if self._gl is not None:
            self._gl.free()
            self._gl = None


def visual_dr_record(sample: Any, camera_names_by_id: dict[int, str]) -> dict[str, Any]:
    """The visual part of a DR draw (:class:`EpisodeSample`), JSON-able, camera jitter by camera name."""
    order = [camera_names_by_id[c] for c in sorted(camera_names_by_id)]
    return {
        "seed": sample.seed,
        "light_scale": float(sample.light_scale),
        "light_rgb": [float(v) for v in sample.light_rgb],
        "camera_dpos_m": {n: [float(v) for v in sample.camera_dpos[k]] for k, n in enumerate(order)},
        "camera_drot_rad": {n: [float(v) for v in sample.camera_drot[k]] for k, n in enumerate(order)},
        "robot_rgb": [float(v) for v in sample.robot_rgb],
        "vial_rgb": [float(v) for v in sample.vial_rgb],
        "rack_rgb": [float(v) for v in sample.rack_rgb],
        "mat_rgb": [float(v) for v in sample.mat_rgb],
    }


class EpisodeRenderer:
    """A twin (its own model copy and GL context) that replays episodes through ``cameras``."""

    def __init__(
        self,
        width: int,
        height: int,
        cameras: Sequence[str],
        *,
        visual_dr: bool = True,
        shadows: bool = True,
        frames_per_pass: int = 1,
        readback: str = "rgb",
    ) -> None:
        from dataclasses import replace

        from so101_core.sim.config import load_sim_config
        from so101_core.sim.randomization import DRConfig, load_dr_config
        from so101_core.sim.twin import Twin

        sim = replace(load_sim_config(), width=width, height=height)
        self.twin = Twin(sim, load_dr_config() if visual_dr else DRConfig.disabled())
        missing = [c for c in cameras if c not in self.twin.index.cameras]
        if missing:
            raise RenderError(f"the scene has no camera {missing} (has {sorted(self.twin.index.cameras)})")
        self.cameras = tuple(cameras)
        self.width, self.height = width, height
        self._names_by_id = {int(v): k for k, v in self.twin.index.cameras.items()}
        self.renderer = TiledRenderer(
            self.twin.model,
            width,
            height,
            [self.twin.index.cameras[c] for c in cameras],
            shadows=shadows,
            frames_per_pass=frames_per_pass,
            readback=readback,
        )

    def prepare(self, seed: int | None) -> dict[str, Any]:
        """Apply the DR draw of ``seed`` (model colours, lights, cameras); returns its visual record."""
        sample = self.twin.reset(seed)
        return visual_dr_record(sample, self._names_by_id)

    def intrinsics(self, camera: str) -> F64:
        """Pinhole K (3, 3) px of ``camera`` at the render size."""
        return self.twin.camera_intrinsics(camera, self.width, self.height)

    def frames(self, replay: Replay) -> Iterator[dict[str, U8]]:
        """Yield per frame ``{camera: (H, W, 3) uint8}`` (views, valid until the next item). Every object the
        episode recorded is drawn where it was (the standing vials of pre-filled slots included); a standing
        vial it did not record (a demo from before them) waits parked out of view; an object the scene lacks is
        a :class:`RenderError`."""
        import mujoco
        from so101_core.sim.scene import parked_position

        tw = self.twin
        m, d = tw.model, tw.data
        jadr = tw.index.qpos_adr
        unknown = sorted(set(replay.objects) - set(tw.index.object_qpos_adr))
        if unknown:
            raise RenderError(f"the episode records objects {unknown} the scene lacks (has {list(tw.object_names)})")
        objs = [(tw.index.object_qpos_adr[n], p) for n, p in replay.objects.items()]
        for k, name in enumerate(tw.standing_names):
            if name not in replay.objects:
                a = tw.index.object_qpos_adr[name]
                d.qpos[a : a + 7] = [*parked_position(k), 1.0, 0.0, 0.0, 0.0]
        n, fpp, w = replay.frames, self.renderer.frames_per_pass, self.width
        for start in range(0, n, fpp):
            count = min(fpp, n - start)

            def set_state(i: int, start: int = start) -> None:
                j = start + i
                d.qpos[jadr] = replay.q[j]
                for adr, poses in objs:
                    d.qpos[adr : adr + 7] = poses[j]
                mujoco.mj_kinematics(m, d)
                mujoco.mj_comPos(m, d)
                mujoco.mj_camlight(m, d)

            block = self.renderer.render(d, set_state, count)
            for i in range(count):
                yield {c: block[i, :, k * w : (k + 1) * w] for k, c in enumerate(self.cameras)}

    def close(self) -> None:
        self.renderer.close()
        self.twin.close()
