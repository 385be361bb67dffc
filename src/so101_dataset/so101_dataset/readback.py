"""Asynchronous readback of MuJoCo's offscreen colour buffer through OpenGL pixel-pack buffers (PBOs).

``glReadPixels`` into a bound pixel-pack buffer returns at once: the GPU copies the pixels while the CPU
goes on (draws the next pass, encodes the previous one); mapping the buffer later waits only for what is
not done yet. ``mjr_readPixels`` instead reads into client memory, a full GPU→CPU stall per call.

Formats: ``rgb`` (what ``mjr_readPixels`` reads; the mapped buffer is handed out as is, no CPU copy) or
``bgra`` (the GPU's native layout, often the driver's fast path; converted to RGB by one OpenCV pass).
The pixels are MuJoCo's own, bottom row first; the caller flips (a view).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import RenderError

U8 = npt.NDArray[np.uint8]
PBO_FORMATS = ("rgb", "bgra")


class PixelPackBuffers:
    """``n`` pixel-pack buffers of ``pixels`` px each, created in the current OpenGL context."""

    def __init__(self, n: int, pixels: int, fmt: str = "rgb") -> None:
        from OpenGL import GL

        if fmt not in PBO_FORMATS:
            raise RenderError(f"pixel-pack format must be one of {PBO_FORMATS}, got {fmt!r}")
        self._gl = GL
        self.fmt = fmt
        self.channels = 3 if fmt == "rgb" else 4
        self._gl_format = GL.GL_RGB if fmt == "rgb" else GL.GL_BGRA
        self._cvt: Any = None
        if fmt == "bgra":
            try:
                import cv2
            except ImportError as exc:
                raise RenderError("readback pbo_bgra needs OpenCV (cv2) for the BGRA→RGB pass") from exc
            self._cvt = cv2
        self.ids = [int(b) for b in np.atleast_1d(GL.glGenBuffers(n))]
        for b in self.ids:
            GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, b)
            GL.glBufferData(GL.GL_PIXEL_PACK_BUFFER, pixels * self.channels, None, GL.GL_STREAM_READ)
        GL.glBindBuffer(GL.GL_PIXEL_PACK_BUFFER, 0)
        self._mapped: int | None = None  # slot whose memory is handed out (rgb)

    def free_slot(self, busy: Sequence[int]) -> int:
        """A slot not in ``busy`` (released first if its memory is still handed out)."""
        slot = next(i for i in range(len(self.ids)) if i not in busy)
        self.release()
        return slot

    def read(self, slot: int, ctx: Any, rect: Any) -> None:
        """Start reading ``rect`` of ``ctx``'s offscreen colour buffer (resolved if multisampled) into ``slot``."""
        from OpenGL.raw.GL.VERSION.GL_1_0 import glReadPixels

        gl = self._gl
        x, y, w, h = rect.left, rect.bottom, rect.width, rect.height
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, ctx.offFBO)
        if ctx.offSamples:  # resolve the multisampled buffer first, as mjr_readPixels does
            gl.glBindFramebuffer(gl.GL_DRAW_FRAMEBUFFER, ctx.offFBO_r)
            gl.glBlitFramebuffer(x, y, x + w, y + h, x, y, x + w, y + h, gl.GL_COLOR_BUFFER_BIT, gl.GL_NEAREST)
            gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, ctx.offFBO_r)
        gl.glReadBuffer(gl.GL_COLOR_ATTACHMENT0)
        gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
        gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, self.ids[slot])
        glReadPixels(x, y, w, h, self._gl_format, gl.GL_UNSIGNED_BYTE, ctypes.c_void_p(0))
        gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, 0)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, ctx.offFBO)

    def fetch(self, slot: int, h: int, w: int, scratch: U8) -> U8:
        """Wait for ``slot``'s (h, w) px; returns (h, w, 3) RGB, bottom row first.

        ``rgb``: the mapped buffer itself, valid until :meth:`release` (called by the next fetch or
        :meth:`free_slot`). ``bgra``: converted into ``scratch[:h]`` (≥ (h, w, 3) uint8) and unmapped."""
        gl = self._gl
        self.release()
        n = h * w * self.channels
        gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, self.ids[slot])
        ptr = gl.glMapBufferRange(gl.GL_PIXEL_PACK_BUFFER, 0, n, gl.GL_MAP_READ_BIT)
        if not ptr:
            gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, 0)
            raise RenderError("glMapBufferRange of the pixel-pack buffer failed")
        mem = np.frombuffer((ctypes.c_ubyte * n).from_address(int(ptr)), dtype=np.uint8).reshape(h, w, self.channels)
        if self._cvt is None:
            self._mapped = slot
            gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, 0)
            return mem
        try:
            out = scratch[:h]
            self._cvt.cvtColor(mem, self._cvt.COLOR_BGRA2RGB, dst=out)
            return out
        finally:
            gl.glUnmapBuffer(gl.GL_PIXEL_PACK_BUFFER)
            gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, 0)

    def release(self) -> None:
        """Unmap the buffer handed out by the last ``rgb`` fetch (its arrays are invalid afterwards)."""
        if self._mapped is None:
            return
        gl = self._gl
        gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, self.ids[self._mapped])
        gl.glUnmapBuffer(gl.GL_PIXEL_PACK_BUFFER)
        gl.glBindBuffer(gl.GL_PIXEL_PACK_BUFFER, 0)
        self._mapped = None

    def free(self) -> None:
        self.release()
        self._gl.glDeleteBuffers(len(self.ids), self.ids)
        self.ids = []
