"""Kinematic replay of a recorded episode through the twin's cameras, all cameras in one render pass.

Per frame the recorded joint positions (6,) rad and object poses (7,) (xyz m + quaternion wxyz) are written
into ``MjData`` and only kinematics run (``mj_kinematics`` + ``mj_comPos`` + ``mj_camlight``; no physics).
The episode's visual randomization (light intensity and tint, robot/object/mat colours, camera jitter) comes
from its DR seed through :meth:`Twin.reset`, so a demo renders as the generator saw it; :func:`visual_dr_record`
is what gets recorded beside the episode.

Why not ``mujoco.Renderer``: it renders one camera per call, with one ``glReadPixels`` each (a GPU→CPU sync),
so three cameras cost three round trips. :class:`TiledRenderer` draws every camera of ``frames_per_pass``
consecutive frames into viewports of one offscreen buffer (a grid: cameras across, frames down) and reads
it back once (``render.readback: pbo``: asynchronously, into pixel-pack buffers, see :mod:`.readback`,
while the next pass is drawn and the previous one encoded). The scene's geometry is built once per frame
(``mjv_updateScene``); per camera only the camera and the head light are updated. Same model, same data,
same pixels on the same machine (deterministic).

OpenGL: ``MUJOCO_GL`` (egl: NVIDIA EGL on the GPU machine, Mesa llvmpipe on CPU; or osmesa) is fixed when
``mujoco`` is first imported, so worker processes set it before importing (see :func:`select_gl`).
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from so101_core.arrays import F64

from .errors import RenderError
from .readback import PixelPackBuffers

U8 = npt.NDArray[np.uint8]


def select_gl(preference: str) -> str:
    """Set ``MUJOCO_GL`` before mujoco is imported (``auto`` keeps the environment's choice, default egl)."""
    if "mujoco" in sys.modules:
        return os.environ.get("MUJOCO_GL", "")
    if preference == "auto":
        os.environ.setdefault("MUJOCO_GL", "egl")
    else:
        os.environ["MUJOCO_GL"] = preference
    return os.environ["MUJOCO_GL"]


@dataclass
class RenderTimes:
    """Seconds spent per phase, summed over ``frames`` frames (all cameras of a frame count once)."""

    scene_s: float = 0.0  # state write + kinematics + mjv_updateScene / updateCamera
    draw_s: float = 0.0  # mjr_render calls (GL command submission)
    readback_s: float = 0.0  # starting the read (sync: mjr_readPixels, waits for the GPU) + collecting it
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


READBACKS = ("sync", "pbo", "pbo_bgra")


class TiledRenderer:
    """Renders ``cameras`` (twin camera ids) of up to ``frames_per_pass`` frames into one offscreen buffer.

    ``frames_per_pass`` may be lowered later (never above the capacity it was built with).

    The buffer is (frames_per_pass·H, ncam·W) px; a pass comes back as a top-down view
    ``(n, H, ncam·W, 3)`` uint8; camera k of frame i is ``out[i, :, k*W:(k+1)*W]``. The returned array is
    reused by a later pass: copy what must outlive it.

    ``readback``: ``sync`` = ``mjr_readPixels`` (RGB; the call waits for the GPU and the copy); ``pbo`` /
    ``pbo_bgra`` = an asynchronous read into one of two pixel-pack buffers (:mod:`.readback`, RGB or BGRA),
    :meth:`collect` maps the oldest pass. A pass is always a flipped *view* (lerobot copies each frame
    anyway): no CPU copy for ``sync`` and ``pbo``, one BGRA→RGB pass for ``pbo_bgra``. Same pixels.
    Use :meth:`submit` / :meth:`collect` to keep up to :attr:`depth` passes in flight, or :meth:`render`.
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
        readback: str = "sync",
    ) -> None:
        import mujoco

        self._mj = mujoco
        self.model = model
        self.width, self.height = width, height
        self.ncam = len(camera_ids)
        self.frames_per_pass = frames_per_pass  # frames per pass now (≤ capacity)
        self.capacity = frames_per_pass  # rows of the buffer
        bw, bh = width * self.ncam, height * frames_per_pass
        model.vis.global_.offwidth = max(int(model.vis.global_.offwidth), bw)
        model.vis.global_.offheight = max(int(model.vis.global_.offheight), bh)
        self._gl: Any = None
        self._ctx: Any = None
        try:
            self._gl = mujoco.GLContext(bw, bh)
            self._gl.make_current()
            self._ctx = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        except Exception as exc:  # no EGL/OSMesa: name the backend
            raise RenderError(
                f"cannot create an OpenGL context (MUJOCO_GL={os.environ.get('MUJOCO_GL')}): {exc}"
            ) from exc
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._ctx)
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
        self._pending: deque[tuple[int, int]] = deque()  # (slot, count) of passes submitted, oldest first
        self._pbo: PixelPackBuffers | None = None
        self._buf = np.empty((bh, bw, 3), dtype=np.uint8)  # sync: mjr_readPixels target; pbo_bgra: converted
        self.readback = ""
        self.depth = 1
        self.set_readback(readback)
        self.times = RenderTimes()

    def set_readback(self, readback: str) -> None:
        """Switch the readback (one of :data:`READBACKS`; nothing may be pending); the pixels stay the same."""
        if readback not in READBACKS:
            raise RenderError(f"readback must be one of {READBACKS}, got {readback!r}")
        if self._pending:
            raise RenderError("cannot switch the readback with passes pending")
        fmt = "bgra" if readback == "pbo_bgra" else "rgb"
        if readback != "sync" and (self._pbo is None or self._pbo.fmt != fmt):
            self._gl.make_current()
            if self._pbo is not None:
                self._pbo.free()
                self._pbo = None
            try:
                self._pbo = PixelPackBuffers(2, self._buf.size // 3, fmt)
            except RenderError:
                raise
            except Exception as exc:  # PyOpenGL missing or no GL entry points: name the way out
                raise RenderError(f"readback {readback}: no pixel-pack buffers ({exc!r}); use readback sync") from exc
        self.readback = readback
        self.depth = 1 if readback == "sync" else 2

    @property
    def pending(self) -> int:
        """Passes submitted and not yet collected."""
        return len(self._pending)

    def submit(self, data: Any, set_state: Any, count: int) -> None:
        """Draw ``count`` (≤ frames_per_pass) frames and start their readback; ``set_state(i)`` writes frame
        i's state into ``data`` (kinematics included). At most :attr:`depth` passes may be pending."""
        mj = self._mj
        if not 1 <= count <= self.capacity:
            raise RenderError(f"count must be 1..{self.capacity}, got {count}")
        if len(self._pending) >= self.depth:
            raise RenderError(f"{self.depth} passes already pending: collect one first")
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
        slot = 0
        if self.readback != "sync" and self._pbo is not None:
            slot = self._pbo.free_slot([s for s, _ in self._pending])
            self._pbo.read(slot, self._ctx, self._pass_rect(count))
        else:
            if self._pbo is not None:
                self._pbo.release()
            mj.mjr_readPixels(self._buf[: count * self.height], None, self._pass_rect(count), self._ctx)
        self._pending.append((slot, count))
        t2 = time.perf_counter()
        self.times.add(RenderTimes(t1 - t0 - draw, draw, t2 - t1, count))

    def collect(self) -> U8:
        """The oldest pending pass: (count, H, ncam·W, 3) uint8 view, top row first (valid until the next
        submit or collect)."""
        if not self._pending:
            raise RenderError("no pass pending")
        slot, count = self._pending.popleft()
        h, bw = count * self.height, self.width * self.ncam
        t0 = time.perf_counter()
        if self.readback != "sync" and self._pbo is not None:
            self._gl.make_current()
            out = self._pbo.fetch(slot, h, bw, self._buf)[::-1]
        else:
            out = self._buf[:h][::-1]
        self.times.readback_s += time.perf_counter() - t0
        return out.reshape(count, self.height, bw, 3)

    def render(self, data: Any, set_state: Any, count: int) -> U8:
        """:meth:`submit` then :meth:`collect` one pass (nothing else pending)."""
        self.submit(data, set_state, count)
        return self.collect()

    def _pass_rect(self, count: int) -> Any:
        return self._mj.MjrRect(0, (self.capacity - count) * self.height, self.width * self.ncam, count * self.height)

    def close(self) -> None:
        self._pending.clear()
        if self._gl is not None:
            self._gl.make_current()
        if self._pbo is not None:
            self._pbo.free()
            self._pbo = None
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
        readback: str = "sync",
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
        """Yield per frame ``{camera: (H, W, 3) uint8}`` (views, valid until the next item).

        Up to ``renderer.depth`` passes are in flight: pass k+1 is drawn and its readback started before
        pass k's frames are handed out, so the GPU works while the caller encodes."""
        import mujoco

        tw = self.twin
        m, d = tw.model, tw.data
        jadr = tw.index.qpos_adr
        objs = [(tw.index.object_qpos_adr[n], p) for n, p in replay.objects.items() if n in tw.index.object_qpos_adr]
        r = self.renderer
        n, fpp, w = replay.frames, r.frames_per_pass, self.width
        cams = list(enumerate(self.cameras))

        def emit() -> Iterator[dict[str, U8]]:
            block = r.collect()
            for i in range(block.shape[0]):
                yield {c: block[i, :, k * w : (k + 1) * w] for k, c in cams}

        try:
            for start in range(0, n, fpp):

                def set_state(i: int, start: int = start) -> None:
                    j = start + i
                    d.qpos[jadr] = replay.q[j]
                    for adr, poses in objs:
                        d.qpos[adr : adr + 7] = poses[j]
                    mujoco.mj_kinematics(m, d)
                    mujoco.mj_comPos(m, d)
                    mujoco.mj_camlight(m, d)

                if r.pending >= r.depth:
                    yield from emit()
                r.submit(d, set_state, min(fpp, n - start))
            while r.pending:
                yield from emit()
        finally:  # a consumer that stops early leaves nothing pending for the next episode
            while r.pending:
                r.collect()

    def close(self) -> None:
        self.renderer.close()
        self.twin.close()
