"""``so101 bench train``: how fast each data source feeds ACT training, and training throughput.

Sources: ``memory`` (the dataset decoded once into device memory, :mod:`.frame_cache`) and ``dataloader``
(LeRobot's per-frame video decoding in ``num_workers`` processes). Per source: ``data_samples_per_s`` (batches
pulled without a model: the ceiling that source puts on training), ``cold_start_s`` (opening the source and its
first batch: decoding into memory, or spawning the workers) and, with ``steps`` > 0, ``samples_per_s`` of a fresh
training run of train.yaml's model and batch size (on a CPU the model, not the data, bounds that figure).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from .config import TrainConfig, load_train_config
from .train import _check_dataset, batch_stream, open_dataset, resolve_device, train_policy

SOURCES = (("dataloader", 0.0), ("memory", 1024.0))


def data_throughput(dataset_dir: Path, cfg: TrainConfig, batches: int) -> dict[str, Any]:
    """Cold start and samples/s of pulling ``batches`` batches (on ``cfg.device``) from the configured source."""
    import torch

    device = resolve_device(cfg.device)
    dataset = open_dataset(dataset_dir, cfg.chunk_size)
    images = _check_dataset(dataset.meta.features, cfg.cameras)
    t0 = time.perf_counter()
    source, stream = batch_stream(dataset, images, cfg, 0, device)
    first = next(stream)
    cold = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(batches):
        batch = next(stream)
        if device.startswith("cuda"):  # the dataloader's batches still have to reach the device
            batch = {k: v.to(device, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}
            torch.cuda.synchronize()
    rate = batches * cfg.batch_size / (time.perf_counter() - t1)
    shutdown = getattr(stream, "_shutdown_workers", None)  # a DataLoader iterator: stop its workers now
    if shutdown is not None:
        shutdown()
    del stream, first
    return {"data_source": source, "cold_start_s": cold, "data_samples_per_s": rate}


def run_train_benchmark(
    dataset: Path, steps: int = 0, device: str = "auto", config: TrainConfig | None = None, batches: int = 50
) -> dict[str, Any]:
    """``{"sources": {name: {...}}, "data_speedup_memory_vs_dataloader", "train_samples_per_s"}``."""
    base = dataclasses.replace(config or load_train_config(), device=device)
    import json

    info = json.loads((Path(dataset) / "meta" / "info.json").read_text())
    images = {k: v["shape"] for k, v in info["features"].items() if k.startswith("observation.images.")}
    out: dict[str, Any] = {
        "dataset": str(dataset),
        "dataset_episodes": info["total_episodes"],
        "dataset_frames": info["total_frames"],
        "dataset_images": images,
        "device": resolve_device(device),
        "batch_size": base.batch_size,
        "num_workers": base.num_workers,
        "batches": batches,
        "steps": steps,
        "sources": {},
    }
    for name, gb in SOURCES:
        cfg = dataclasses.replace(base, frame_cache_gb=gb)
        row = data_throughput(dataset, cfg, batches)
        if steps > 0:
            run_cfg = dataclasses.replace(
                cfg, steps=steps, save_freq=10**9, log_freq=10**9, system_metrics=False, log_checkpoints=False
            )
            with tempfile.TemporaryDirectory() as tmp:
                result = train_policy(dataset, Path(tmp) / "run", run_cfg)
            row["samples_per_s"] = result.samples_per_s
        out["sources"][name] = row
    rows = out["sources"]
    out["data_speedup_memory_vs_dataloader"] = (
        rows["memory"]["data_samples_per_s"] / rows["dataloader"]["data_samples_per_s"]
    )
    out["train_samples_per_s"] = max((r["samples_per_s"] for r in rows.values() if "samples_per_s" in r), default=None)
    return out
