"""Evaluation videos: H.264 MP4 that a browser plays, written without touching the process's scheduling."""

from __future__ import annotations

import os
from pathlib import Path

import av
import numpy as np
from so101_policy.report import write_video


def realtime_threads() -> list[int]:
    return [
        int(t.name)
        for t in Path("/proc/self/task").iterdir()
        if os.sched_getscheduler(int(t.name)) in (os.SCHED_FIFO, os.SCHED_RR)
    ]


def test_video_is_h264_with_every_frame_and_leaves_scheduling_alone(tmp_path: Path) -> None:
    # odd sizes are cut to even ones (yuv420p); a (H, W, 3) gradient whose level tells the frame
    frames = [np.full((49, 65, 3), 10 * i, np.uint8) for i in range(12)]
    before = set(realtime_threads())  # zenoh's shared-memory watchdogs are real-time by design, if running
    name = write_video(frames, 10.0, tmp_path / "episode.mp4")
    assert name == "episode.mp4"
    # run as root, PyAV's SVT-AV1 (the former codec) put this thread, and the threads it started, under SCHED_FIFO 99
    assert os.sched_getscheduler(0) == os.SCHED_OTHER and set(realtime_threads()) <= before
    with av.open(str(tmp_path / name)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == "h264" and (stream.width, stream.height) == (64, 48)
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    assert len(decoded) == 12
    assert abs(float(decoded[5].mean()) - 50) < 3 and abs(float(decoded[11].mean()) - 110) < 3
    assert write_video([], 10.0, tmp_path / "none.mp4") is None
