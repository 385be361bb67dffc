"""``so101 bench train``: how fast each data source feeds policy training, and training throughput.

Sources of a LeRobot v3.0 dataset: ``memory`` (decoded once into device memory, :mod:`.frame_cache`) and
``dataloader`` (LeRobot's per-frame video decoding in ``num_workers`` processes); of a dataset build whose units
kept their renders: ``rendered frames`` (read into device memory, :func:`.training_data.decode_units`). Per source:
``data_samples_per_s`` (batches pulled without a model: the ceiling that source puts on training), ``open_s``
(metadata and normalisation statistics), ``cold_start_s`` (opening the source and its first batch: decoding or
reading into memory, or spawning the workers; ``open_s`` not included) and, with ``steps`` > 0, ``samples_per_s``
of a fresh training run of train.yaml's model and batch size (on a CPU the model, not the data, bounds that
figure). Every training slice pays ``open_s + cold_start_s`` before its first step.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from so101_core.lerobot_schema import ACTION, OBS_STATE, image_key, is_image_key

from .config import TrainConfig, load_train_config
from .train import _check_dataset, batch_stream, resolve_device, sync_device, train_policy
from .training_data import aux_pose_labels, open_training_data

SOURCES = (("dataloader", 0.0), ("memory", 1024.0))


def data_throughput(dataset_dir: Path, cfg: TrainConfig, batches: int) -> dict[str, Any]:
    """Cold start and samples/s of pulling ``batches`` batches (on ``cfg.device``) from the configured source."""
    import torch

    device = resolve_device(cfg.device)
    t_open = time.perf_counter()
    data = open_training_data(dataset_dir, cfg.max_episodes)
    opened = time.perf_counter() - t_open
    images = _check_dataset(data.features, cfg.cameras)
    t0 = time.perf_counter()
    labels = aux_pose_labels(data)[0] if cfg.aux_pose_weight > 0 else None  # the batches training pulls
    source, stream = batch_stream(data, images, cfg, 0, device, labels)
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
    return {"data_source": source, "open_s": opened, "cold_start_s": cold, "data_samples_per_s": rate}


def run_train_benchmark(
    dataset: Path, steps: int = 0, device: str = "auto", config: TrainConfig | None = None, batches: int = 50
) -> dict[str, Any]:
    """``{"sources": {name: {...}}, "data_speedup_memory_vs_dataloader", "train_samples_per_s"}``."""
    base = dataclasses.replace(config or load_train_config(), device=device)
    data = open_training_data(dataset, base.max_episodes)
    sources = SOURCES if data.kind == "lerobot" else (("rendered frames", base.frame_cache_gb),)
    out: dict[str, Any] = {
        "dataset": str(dataset),
        "dataset_kind": data.kind,
        "dataset_episodes": data.episodes,
        "dataset_frames": data.frames,
        "dataset_images": {k: list(v["shape"]) for k, v in data.features.items() if is_image_key(k)},
        "device": resolve_device(device),
        "batch_size": base.batch_size,
        "num_workers": base.num_workers,
        "batches": batches,
        "steps": steps,
        "sources": {},
    }
    for name, gb in sources:
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
    if data.kind == "lerobot":
        out["data_speedup_memory_vs_dataloader"] = (
            rows["memory"]["data_samples_per_s"] / rows["dataloader"]["data_samples_per_s"]
        )
    out["train_samples_per_s"] = max((r["samples_per_s"] for r in rows.values() if "samples_per_s" in r), default=None)
    return out


def synthetic_training_throughput(
    cfg: TrainConfig, cameras: int = 3, height: int = 120, width: int = 160, frames: int = 4096, seconds: float = 20.0
) -> dict[str, Any]:
    """Training steps of ``cfg``'s model and batch size on random frames already in device memory (the memory
    source's steady state, without a dataset): ``cold_start_s`` (model build to the end of the first step, cuDNN
    autotuning included), ``samples_per_s`` over ``seconds`` of steps after it, and ``gflop_per_sample``
    (forward + backward ≈ 3 × the forward's, counted by torch's FLOP counter on one sample)."""
    import numpy as np
    import torch
    from lerobot.policies import make_pre_post_processors

    from .frame_cache import AUX_POSE, DecodedDataset
    from .policy_types import lerobot_class, lerobot_config, trainable
    from .schedule import lr_factor
    from .train import preprocess, train_step

    device = resolve_device(cfg.device)
    if device.startswith("cuda"):
        torch.backends.cudnn.benchmark = True
    names = [image_key(c) for c in ("ego", "side", "top")[:cameras]]
    features: dict[str, Any] = {k: {"dtype": "float32", "shape": (6,), "names": None} for k in (OBS_STATE, ACTION)}
    for k in names:
        features[k] = {"dtype": "video", "shape": (height, width, 3), "names": ["height", "width", "channels"]}
    stats: dict[str, Any] = {
        k: {"mean": np.zeros(6), "std": np.ones(6), "min": -np.ones(6), "max": np.ones(6)} for k in (OBS_STATE, ACTION)
    }
    stats |= {k: {"mean": np.full((3, 1, 1), 0.5), "std": np.full((3, 1, 1), 0.25)} for k in names}
    t0 = time.perf_counter()
    torch.manual_seed(cfg.seed)
    policy_cfg = lerobot_config(cfg, features, names, device)
    policy = lerobot_class(cfg.policy)(policy_cfg).to(device).train()
    pre, _ = make_pre_post_processors(policy_cfg, dataset_stats=stats)
    model = trainable(policy, cfg, fresh=True)
    opt = torch.optim.AdamW(
        model.optim_groups(cfg.lr, cfg.lr_backbone), lr=cfg.lr, betas=model.betas, fused=device.startswith("cuda")
    )
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.lr_schedule, cfg.warmup_steps, cfg.steps))
    rng = np.random.default_rng(0)
    episode = np.repeat(np.arange(frames // 256 + 1), 256)[:frames]
    images = {k: rng.integers(0, 256, (frames, height, width, 3), dtype=np.uint8) for k in names}
    labels = {AUX_POSE: rng.normal(size=(frames, 5))} if cfg.aux_pose_weight > 0 else None
    data = DecodedDataset(
        rng.normal(size=(frames, 6)), rng.normal(size=(frames, 6)), episode, images, cfg.chunk_size, device, labels
    )
    batches = data.batches(cfg.batch_size, cfg.seed)
    amp = torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=cfg.use_amp)

    def step() -> None:
        train_step(model, opt, sched, preprocess(pre, next(batches)), cfg.grad_clip_norm, amp)

    step()
    sync_device(device)
    cold = time.perf_counter() - t0
    for _ in range(3):  # past the cuDNN autotuning of the first shapes
        step()
    sync_device(device)
    t1, n = time.perf_counter(), 0
    while time.perf_counter() - t1 < seconds:
        for _ in range(5):
            step()
        n += 5
        sync_device(device)
    rate = n * cfg.batch_size / (time.perf_counter() - t1)
    flops = _gflop_per_sample(model, preprocess(pre, next(batches)), amp)
    out = {
        "policy": cfg.policy,
        "batch_size": cfg.batch_size,
        "backbone_norm": cfg.backbone_norm if cfg.policy == "act" else None,  # DP's ResNets: GroupNorm
        "use_amp": cfg.use_amp,
        "cameras": cameras,
        "image_hw": [height, width],
        "cold_start_s": cold,
        "steps": n,
        "samples_per_s": rate,
        "gflop_per_sample": flops,
        "tflop_per_s": rate * flops / 1e3,
    }
    if device.startswith("cuda"):
        out["gpu_mem_gb"] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
    return out


def _gflop_per_sample(model: Any, batch: dict[str, Any], amp: Any) -> float:
    """Forward + backward GFLOP of one sample (3 × the forward's FLOPs on the first item of ``batch``)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    one = {k: v[:1] if torch.is_tensor(v) else v for k, v in batch.items()}
    counter = FlopCounterMode(display=False)
    with counter, amp, torch.no_grad():
        model.loss(one)
    return 3.0 * counter.get_total_flops() / 1e9


def synthetic_sweep(
    base: TrainConfig, batch_sizes: list[int], norms: list[str], cameras: int, height: int, width: int, seconds: float
) -> dict[str, Any]:
    """:func:`synthetic_training_throughput` for every (batch size, backbone norm) pair; the best samples/s
    (Diffusion Policy has no backbone norm setting: ``norms`` are ACT's)."""
    rows = []
    for norm in norms if base.policy == "act" else [base.backbone_norm]:
        for batch in batch_sizes:
            cfg = dataclasses.replace(base, batch_size=batch, backbone_norm=norm)
            rows.append(synthetic_training_throughput(cfg, cameras, height, width, seconds=seconds))
            print(json.dumps(rows[-1]), flush=True)
    best = max(rows, key=lambda r: r["samples_per_s"])
    return {
        "source": "synthetic frames in device memory",
        "variants": rows,
        "train_samples_per_s": best["samples_per_s"],
        "best": best,
    }
