"""ACT training through LeRobot, offline: our loop around ``ACTPolicy``, MLflow tracking, resumable checkpoints.

Nothing downloads: the ResNet backbone starts from random weights (``pretrained_backbone_weights=None``), so
image statistics come from the dataset (not ImageNet's). CUDA is used when present (``device: auto``).
A run directory holds ``checkpoints/`` (see :mod:`.checkpoints`), ``mlflow.db`` + ``mlartifacts/`` (the default
tracking store) and ``mlflow_run_id`` (a resumed run continues the same MLflow run). Calling
:func:`train_policy` again on the same ``out_dir`` resumes from ``checkpoints/last`` (e.g. after a SIGKILL).
Co-training: train on a mixed dataset (sim + real episodes at a chosen ratio, made by ``so101 dataset mix``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import checkpoints as ckpt
from .config import TrainConfig
from .errors import CheckpointError, ConfigError, PolicyError
from .frame_cache import ACTION, STATE, DecodedDataset, decoded_bytes

REPO_ID = "local/so101"
IMAGE_PREFIX = "observation.images."


@dataclass(frozen=True)
class TrainResult:
    """What a finished run produced: the newest checkpoint, steps done in total, the last logged loss, and
    the throughput (samples/s) of this invocation's training steps."""

    checkpoint_dir: Path
    steps: int
    final_loss: float
    samples_per_s: float
    resumed_from: int = 0
    mlflow_run_id: str = ""


@dataclass(frozen=True)
class TrainProgress:
    """One progress report (every ``log_freq`` steps and at the end)."""

    step: int
    steps: int
    loss: float
    samples_per_s: float
    lr: float


ProgressCallback = Callable[[TrainProgress], None]


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"train.device is {device!r} but CUDA is not available")
    return device


def _check_dataset(features: dict[str, Any], cameras: tuple[str, ...]) -> list[str]:
    """The image feature keys to use; raises ConfigError when the dataset lacks what ACT needs."""
    for key in (STATE, ACTION):
        shape = tuple(features.get(key, {}).get("shape", ()))
        if shape != (6,):
            raise ConfigError(f"dataset feature {key!r} must have shape (6,), got {shape or 'none'}")
    images = [k for k, v in features.items() if k.startswith(IMAGE_PREFIX) and v.get("dtype") in ("video", "image")]
    if cameras:
        wanted = [IMAGE_PREFIX + c for c in cameras]
        missing = [k for k in wanted if k not in images]
        if missing:
            raise ConfigError(f"dataset lacks camera features {missing} (has {images})")
        images = wanted
    if not images:
        raise ConfigError("ACT needs at least one camera: the dataset has no observation.images.* feature")
    return images


def _act_config(cfg: TrainConfig, features: dict[str, Any], images: list[str], device: str) -> Any:
    from lerobot.configs.types import FeatureType
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.utils.feature_utils import dataset_to_policy_features

    policy_features = dataset_to_policy_features({k: v for k, v in features.items() if k in (STATE, ACTION, *images)})
    outputs = {k: f for k, f in policy_features.items() if f.type is FeatureType.ACTION}
    inputs = {k: f for k, f in policy_features.items() if k not in outputs}
    return ACTConfig(
        input_features=inputs,
        output_features=outputs,
        device=device,
        use_amp=cfg.use_amp,
        push_to_hub=False,
        chunk_size=cfg.chunk_size,
        n_action_steps=cfg.chunk_size,
        vision_backbone=cfg.vision_backbone,
        pretrained_backbone_weights=None,
        dim_model=cfg.dim_model,
        n_heads=cfg.n_heads,
        dim_feedforward=cfg.dim_feedforward,
        n_encoder_layers=cfg.n_encoder_layers,
        n_decoder_layers=cfg.n_decoder_layers,
        latent_dim=cfg.latent_dim,
        kl_weight=cfg.kl_weight,
        dropout=cfg.dropout,
        optimizer_lr=cfg.lr,
        optimizer_lr_backbone=cfg.lr_backbone,
        optimizer_weight_decay=cfg.weight_decay,
    )


class _EpochSampler:
    """Endless sample indices: epoch e is a permutation drawn with seed ``seed + e``; starts at ``start`` samples
    into the stream (a resumed run continues the same order)."""

    def __init__(self, n: int, seed: int, start: int) -> None:
        self.n, self.seed, self.start = n, seed, start

    def __iter__(self) -> Iterator[int]:
        import torch

        epoch, skip = divmod(self.start, self.n)
        while True:
            perm = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + epoch)).tolist()
            yield from perm[skip:]
            skip = 0
            epoch += 1


def open_dataset(dataset_dir: Path, chunk_size: int) -> Any:
    """The v3.0 dataset as LeRobot reads it for ACT: each item carries the next ``chunk_size`` actions."""
    from lerobot.datasets import LeRobotDataset, LeRobotDatasetMetadata

    fps = LeRobotDatasetMetadata(REPO_ID, root=dataset_dir).fps
    return LeRobotDataset(
        REPO_ID,
        root=dataset_dir,
        delta_timestamps={ACTION: [i / fps for i in range(chunk_size)]},
        video_backend="pyav",
    )


def batch_stream(
    dataset: Any, images: list[str], cfg: TrainConfig, start_step: int, device: str
) -> tuple[str, Iterator[dict[str, Any]]]:
    """(source name, an endless stream of shuffled batches): from the decoded frames in memory when they fit in
    ``cfg.frame_cache_gb``, else from one DataLoader (workers spawned once and kept). Both follow one order."""
    import torch

    sampler = _EpochSampler(len(dataset), cfg.seed, start_step * cfg.batch_size)
    if 0 < decoded_bytes(dataset.meta, images) <= cfg.frame_cache_gb * 2**30:
        decoded = DecodedDataset(dataset, images, cfg.chunk_size, device)
        return "memory", decoded.batches(iter(sampler), cfg.batch_size)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=cfg.batch_size,
        sampler=sampler,
        num_workers=cfg.num_workers,
        pin_memory=device.startswith("cuda"),
        persistent_workers=cfg.num_workers > 0,
        multiprocessing_context="spawn" if cfg.num_workers > 0 else None,
        prefetch_factor=4 if cfg.num_workers > 0 else None,
    )
    return "dataloader", iter(loader)


def _system_metrics(device: str) -> dict[str, float]:
    import torch

    out = {
        "system/rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "system/load1": os.getloadavg()[0],
    }
    if device.startswith("cuda"):
        out["system/gpu_mem_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return out


class _Tracker:
    """MLflow logging (local sqlite store by default); a resumed run continues the same MLflow run. Every
    metric also goes to ``<out>/metrics.jsonl``; where mlflow is not installed that file is the record."""

    def __init__(self, out_dir: Path, cfg: TrainConfig, params: dict[str, Any]) -> None:
        self.jsonl = (out_dir / "metrics.jsonl").open("a", encoding="utf-8")
        self.run_id = ""
        try:
            import mlflow
        except ImportError:
            self.mlflow = None
            (out_dir / "params.json").write_text(json.dumps(params, indent=2, default=str))
            return
        self.mlflow = mlflow
        uri = cfg.tracking_uri or f"sqlite:///{(out_dir / 'mlflow.db').resolve()}"
        mlflow.set_tracking_uri(uri)
        if mlflow.get_experiment_by_name(cfg.experiment) is None:
            artifacts = (out_dir / "mlartifacts").resolve().as_uri() if not cfg.tracking_uri else None
            mlflow.create_experiment(cfg.experiment, artifact_location=artifacts)
        mlflow.set_experiment(cfg.experiment)
        id_file = out_dir / "mlflow_run_id"
        run_id = id_file.read_text().strip() if id_file.is_file() else None
        system = cfg.system_metrics and _has_psutil()
        run = mlflow.start_run(run_id=run_id, run_name=out_dir.name, log_system_metrics=system)
        id_file.write_text(run.info.run_id)
        if run_id is None:
            mlflow.log_params(params)
        self.run_id = run.info.run_id

    def metrics(self, values: dict[str, float], step: int) -> None:
        clean = {k: float(v) for k, v in values.items() if math.isfinite(v)}
        self.jsonl.write(json.dumps({"step": step, **clean}) + "\n")
        self.jsonl.flush()
        if self.mlflow is not None:
            self.mlflow.log_metrics(clean, step=step)

    def artifacts(self, path: Path, name: str) -> None:
        if self.mlflow is not None:
            self.mlflow.log_artifacts(str(path), artifact_path=name)

    def end(self, status: str = "FINISHED") -> None:
        self.jsonl.close()
        if self.mlflow is not None:
            self.mlflow.end_run(status=status)


def _has_psutil() -> bool:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return False
    return True


def _same_model(saved: dict[str, Any], cfg: TrainConfig) -> None:
    """A resumed run must train the same model: every field but steps/frequencies/tracking must match."""
    free = {"steps", "save_freq", "log_freq", "num_workers", "tracking_uri", "system_metrics", "log_checkpoints"}
    free |= {"time_limit_s", "frame_cache_gb"}
    now = dataclasses.asdict(cfg)
    diff = [k for k in now if k not in free and k in saved and _norm(saved[k]) != _norm(now[k])]
    if diff:
        raise ConfigError(f"cannot resume: the config changed ({', '.join(diff)}); use a new --out directory")


def _norm(v: Any) -> Any:
    return list(v) if isinstance(v, tuple | list) else v


def train_policy(
    dataset_dir: Path, out_dir: Path, config: TrainConfig, *, progress: ProgressCallback | None = None
) -> TrainResult:
    """Train ACT on the LeRobot v3.0 dataset at ``dataset_dir`` into ``out_dir`` for ``config.steps`` steps in
    total, resuming from ``out_dir/checkpoints/last`` when it exists.

    Raises:
        ConfigError: a dataset without the features ACT needs, or a resume with a different model config.
        CheckpointError: an unreadable checkpoint to resume from.
    """
    import torch
    from lerobot.common.train_utils import load_training_state, save_training_state
    from lerobot.datasets import LeRobotDatasetMetadata
    from lerobot.policies import make_pre_post_processors
    from lerobot.policies.act.modeling_act import ACTPolicy

    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    if not (dataset_dir / "meta" / "info.json").is_file():
        raise ConfigError(f"{dataset_dir} is not a LeRobot dataset (no meta/info.json)")
    out_dir.mkdir(parents=True, exist_ok=True)
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    meta = LeRobotDatasetMetadata(REPO_ID, root=dataset_dir)
    images = _check_dataset(meta.features, config.cameras)
    last = ckpt.last_checkpoint(out_dir)
    start_step = 0
    if last is not None:
        pretrained = last / ckpt.PRETRAINED
        _same_model(ckpt.read_json(pretrained / ckpt.SO101_CONFIG), config)
        policy = ACTPolicy.from_pretrained(str(pretrained))
        policy.config.device = device
        preprocessor, postprocessor = make_pre_post_processors(
            policy.config,
            pretrained_path=str(pretrained),
            preprocessor_overrides={"device_processor": {"device": device}},
        )
    else:
        act_cfg = _act_config(config, meta.features, images, device)
        policy = ACTPolicy(act_cfg)
        preprocessor, postprocessor = make_pre_post_processors(act_cfg, dataset_stats=meta.stats)
    policy.to(device)
    policy.train()
    optimizer = policy.config.get_optimizer_preset().build(policy.get_optim_params())
    if last is not None:
        try:
            start_step, optimizer, _ = load_training_state(last, optimizer, None)
        except (OSError, KeyError, ValueError) as exc:
            raise CheckpointError(f"cannot resume from {last}: {exc}") from exc
        torch.manual_seed(config.seed + start_step)

    fps = meta.fps
    dataset = open_dataset(dataset_dir, config.chunk_size)
    params = {
        **{f"train.{k}": _norm(v) for k, v in dataclasses.asdict(config).items()},
        "dataset": str(dataset_dir.resolve()),
        "dataset.episodes": meta.total_episodes,
        "dataset.frames": meta.total_frames,
        "dataset.fps": fps,
        "cameras": ",".join(images),
        "device": device,
        "parameters": sum(p.numel() for p in policy.parameters()),
    }
    t_load = time.perf_counter()
    source, batches = batch_stream(dataset, images, config, start_step, device)
    params["data_source"] = source
    params["data_load_s"] = round(time.perf_counter() - t_load, 2)
    tracker = _Tracker(out_dir, config, params)
    status = "FAILED"
    final_loss = math.nan
    samples = 0
    train_time = 0.0
    last_dir = last
    step = start_step
    try:
        window_t, window_n = time.perf_counter(), 0
        stop_at = time.perf_counter() + config.time_limit_s if config.time_limit_s > 0 else math.inf
        while step < config.steps:
            t0 = time.perf_counter()
            batch = preprocessor(next(batches))
            with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=config.use_amp):
                loss, parts = policy.forward(batch)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), config.grad_clip_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            n = int(batch[ACTION].shape[0])
            samples += n
            window_n += n
            train_time += time.perf_counter() - t0
            final_loss = float(loss.item())
            if not math.isfinite(final_loss):
                raise PolicyError(f"training diverged: loss {final_loss} at step {step}")
            out_of_time = time.perf_counter() >= stop_at
            last_step = step == config.steps or out_of_time
            if step % config.log_freq == 0 or last_step:
                now = time.perf_counter()
                rate = window_n / max(now - window_t, 1e-9)
                window_t, window_n = now, 0
                lr = float(optimizer.param_groups[0]["lr"])
                tracker.metrics(
                    {
                        "loss": final_loss,
                        **{f"loss/{k}": float(v) for k, v in parts.items()},
                        "grad_norm": float(grad_norm),
                        "lr": lr,
                        "samples_per_s": rate,
                        **_system_metrics(device),
                    },
                    step,
                )
                if progress is not None:
                    progress(TrainProgress(step, config.steps, final_loss, rate, lr))
            if step % config.save_freq == 0 or last_step:
                last_dir = _save(
                    out_dir, step, config, policy, preprocessor, postprocessor, optimizer, save_training_state
                )
            if out_of_time:
                break
        if last_dir is None:
            raise PolicyError("no checkpoint written")
        if step < config.steps:
            tracker.metrics({"stopped_by_time_limit": 1.0}, step)
        if config.log_checkpoints:
            tracker.artifacts(last_dir / ckpt.PRETRAINED, f"checkpoints/{ckpt.step_name(step)}")
        status = "FINISHED"
    finally:
        tracker.end(status if status == "FINISHED" else "KILLED")
    rate = samples / train_time if train_time > 0 else 0.0
    return TrainResult(last_dir, step, final_loss, rate, start_step, tracker.run_id)


def _save(
    out_dir: Path,
    step: int,
    config: TrainConfig,
    policy: Any,
    preprocessor: Any,
    postprocessor: Any,
    optimizer: Any,
    save_training_state: Callable[..., None],
) -> Path:
    partial = ckpt.partial_dir(out_dir, step)
    pretrained = partial / ckpt.PRETRAINED
    policy.save_pretrained(pretrained)
    preprocessor.save_pretrained(pretrained)
    postprocessor.save_pretrained(pretrained)
    (pretrained / ckpt.SO101_CONFIG).write_text(
        json.dumps({k: _norm(v) for k, v in dataclasses.asdict(config).items()}, indent=2)
    )
    save_training_state(partial, step, optimizer, None, num_processes=1, batch_size=config.batch_size)
    return ckpt.commit(out_dir, partial, step)
