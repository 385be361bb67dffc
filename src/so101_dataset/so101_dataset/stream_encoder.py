"""lerobot's streaming video encoder with cheap image statistics (the v3.0 writer's ``image_stats: exact``).

:class:`CountingStreamingEncoder` is lerobot's ``StreamingVideoEncoder`` (its queues, ``feed_frame`` with its copy,
``finish_episode``, cancel and clean-up) whose per-camera threads differ from lerobot's ``_CameraEncoderThread``
in two per-frame costs only:

- statistics: :class:`~so101_dataset.image_stats.PixelCounts` instead of ``RunningQuantileStats`` (see there);
- the frame handed to PyAV: ``VideoFrame.from_ndarray(rgb24)`` instead of a PIL image and
  ``VideoFrame.from_image`` — the same rgb24 bytes (two copies fewer), so the same MP4 bytes.

The container, stream options (lerobot's ``get_codec_options``), pixel format, time base and timestamps are
lerobot's. :class:`CountingLeRobotDataset` is stock ``LeRobotDataset`` built with this encoder (lerobot's
``_build_streaming_encoder`` hook); what it writes is read by stock ``LeRobotDataset``. RGB uint8 (H, W, 3)
frames only: a depth camera raises.
"""

from __future__ import annotations

import contextlib
import queue
import tempfile
import threading
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from lerobot.configs import RGBEncoderConfig
from lerobot.datasets import LeRobotDataset
from lerobot.datasets.video_utils import StreamingVideoEncoder

from .image_stats import PixelCounts


class _CountingCameraThread(threading.Thread):
    """Encodes one camera's queued frames into ``video_path``; puts ``("ok", stats | None)`` or ``("error", msg)``
    on ``result_queue`` when the ``None`` sentinel (or ``stop_event`` with an empty queue) ends it."""

    def __init__(
        self,
        video_path: Path,
        fps: int,
        encoder: RGBEncoderConfig,
        frame_queue: queue.Queue[Any],
        result_queue: queue.Queue[Any],
        stop_event: threading.Event,
        encoder_threads: int | None,
    ) -> None:
        super().__init__(daemon=True)
        self.video_path = video_path
        self.fps = fps
        self.encoder = encoder
        self.frame_queue = frame_queue
        self.result_queue = result_queue
        self.stop_event = stop_event
        self.encoder_threads = encoder_threads

    def run(self) -> None:
        container: Any = None
        stream: Any = None
        counts = PixelCounts()
        try:
            while True:
                try:
                    frame = self.frame_queue.get(timeout=1)
                except queue.Empty:
                    if self.stop_event.is_set():
                        break
                    continue
                if frame is None:
                    break
                if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8 or frame.ndim != 3:
                    raise ValueError(f"expected an (H, W, 3) uint8 frame, got {getattr(frame, 'shape', frame)!r}")
                if container is None:
                    container, stream = self._open(frame.shape[1], frame.shape[0])
                video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
                video_frame.pts = counts.frames
                video_frame.time_base = Fraction(1, self.fps)
                for packet in stream.encode(video_frame):
                    container.mux(packet)
                counts.update(frame)
            if stream is not None:
                for packet in stream.encode():
                    container.mux(packet)
                container.close()
            self.result_queue.put(("ok", counts.statistics() if counts.frames >= 2 else None))
        except Exception as exc:
            if container is not None:
                with contextlib.suppress(Exception):
                    container.close()
            self.result_queue.put(("error", f"{type(exc).__name__}: {exc}"))

    def _open(self, width: int, height: int) -> tuple[Any, Any]:
        self.video_path.parent.mkdir(parents=True, exist_ok=True)
        container = av.open(str(self.video_path), "w")
        options = self.encoder.get_codec_options(self.encoder_threads, as_strings=True)
        stream = container.add_stream(self.encoder.vcodec, self.fps, options=options)
        stream.pix_fmt = self.encoder.pix_fmt
        stream.width = width
        stream.height = height
        stream.time_base = Fraction(1, self.fps)
        return container, stream


class CountingStreamingEncoder(StreamingVideoEncoder):
    """``StreamingVideoEncoder`` whose camera threads are :class:`_CountingCameraThread`."""

    def start_episode(self, video_keys: list[str], temp_dir: Path, depth_video_keys: list[str] | None = None) -> None:
        """One encoder thread per camera, its MP4 in a fresh temporary directory under ``temp_dir``."""
        if depth_video_keys:
            raise ValueError(f"image_stats 'exact' encodes RGB cameras only, got depth keys {depth_video_keys}")
        if self._episode_active:  # type: ignore[has-type]
            self.cancel_episode()
        self._dropped_frames.clear()
        for key in video_keys:
            frames: queue.Queue[Any] = queue.Queue(maxsize=self.queue_maxsize)
            results: queue.Queue[Any] = queue.Queue(maxsize=1)
            stop = threading.Event()
            path = Path(tempfile.mkdtemp(dir=temp_dir)) / f"{key.replace('/', '_')}_streaming.mp4"
            thread = _CountingCameraThread(
                path, self.fps, self._rgb_encoder, frames, results, stop, self._encoder_threads
            )
            thread.start()
            self._frame_queues[key] = frames
            self._result_queues[key] = results
            self._threads[key] = thread
            self._stop_events[key] = stop
            self._video_paths[key] = path
        self._episode_active = True


class CountingLeRobotDataset(LeRobotDataset):
    """Stock ``LeRobotDataset`` whose ``create(..., streaming_encoding=True)`` streams to
    :class:`CountingStreamingEncoder`."""

    @staticmethod
    def _build_streaming_encoder(
        fps: int,
        rgb_encoder: RGBEncoderConfig | None,
        depth_encoder: Any,
        encoder_queue_maxsize: int,
        encoder_threads: int | None,
    ) -> CountingStreamingEncoder:
        return CountingStreamingEncoder(
            fps=fps,
            rgb_encoder=rgb_encoder,
            depth_encoder=depth_encoder,
            queue_maxsize=encoder_queue_maxsize,
            encoder_threads=encoder_threads,
        )
