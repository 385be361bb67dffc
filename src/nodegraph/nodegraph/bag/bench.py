"""Write-throughput benchmark of BagWriter with 640×480 rgb8 images."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from nodegraph.bag.writer import BagWriter, Compression
from nodegraph.interfaces.messages import make, serialize

WIDTH, HEIGHT = 640, 480


def _image_cdr(seed: int) -> bytes:
    import numpy as np

    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=WIDTH * HEIGHT * 3, dtype=np.uint8)
    msg = make(
        "sensor_msgs/msg/Image",
        height=HEIGHT,
        width=WIDTH,
        encoding="rgb8",
        step=WIDTH * 3,
        data=pixels,
    )
    return serialize(msg, "sensor_msgs/msg/Image")


def write_throughput(
    seconds: float = 3.0,
    *,
    directory: str | os.PathLike[str] | None = None,
    compression: Compression | None = None,
    chunk_size: int = 4 * 1024 * 1024,
    max_queue_bytes: int = 64 * 1024 * 1024,
) -> dict[str, float | int | str | None]:
    """Record 640×480 rgb8 images for ``seconds`` (s) as fast as the writer sustains; report MB/s.

    The producer only queues while the writer keeps up (queue below ``max_queue_bytes``), so the figure is
    the sustained disk rate including close (summary + metadata). The bag is deleted afterwards.
    """
    images = [_image_cdr(seed) for seed in range(4)]
    root = Path(tempfile.mkdtemp(prefix="so101-bag-bench-", dir=directory))
    try:
        bag_path = root / "bench"
        writer = BagWriter(bag_path, chunk_size=chunk_size, compression=compression, max_queue_bytes=max_queue_bytes)
        begin = time.perf_counter()
        with writer:
            writer.add_topic("/cameras/ego/image_raw", "sensor_msgs/msg/Image")
            i = 0
            while time.perf_counter() - begin < seconds:
                if writer.stats().queued_bytes + len(images[0]) > max_queue_bytes // 2:
                    time.sleep(0.001)
                    continue
                writer.write("/cameras/ego/image_raw", time.time_ns(), images[i % len(images)])
                i += 1
        elapsed = time.perf_counter() - begin
        size = sum(f.stat().st_size for f in bag_path.iterdir())
        payload = writer.written * len(images[0])
        return {
            "seconds": round(elapsed, 3),
            "messages": writer.written,
            "dropped": writer.dropped,
            "payload_bytes": payload,
            "file_bytes": size,
            "mb_per_s": round(payload / elapsed / 1e6, 1),
            "msgs_per_s": round(writer.written / elapsed, 1),
            "compression": compression,
            "chunk_size": chunk_size,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
