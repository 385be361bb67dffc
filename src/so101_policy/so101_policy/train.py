"""Policy training through LeRobot, offline: our loop around LeRobot's ``ACTPolicy`` or ``DiffusionPolicy``
(``train.policy``, :mod:`.policy_types`), MLflow tracking, resumable checkpoints.

Nothing downloads: the ResNet backbones start from random weights (``pretrained_backbone_weights=None``), so
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
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.lerobot_schema import ACTION, OBS_STATE, image_key, is_image_key

from . import checkpoints as ckpt
from .act_training import contiguous_state, match_layout
from .config import TrainConfig
from .errors import CheckpointError, ConfigError, PolicyError
from .frame_cache import AUX_POSE, DecodedDataset, cache_home, frame_bytes
from .policy_types import Trainable, lerobot_class, lerobot_config, trainable
from .schedule import lr_factor
from .training_data import TrainingData, aux_pose_labels, decode_units, open_training_data

REPO_ID = "local/so101"


@dataclass(frozen=True)
class TrainResult:
    """What a finished run produced: the newest checkpoint, steps done in total, the last logged loss (mean over
    the last logging window), and the throughput (samples/s) of this invocation's training steps after the
    first (checkpoint saving excluded; the first step's cost is in ``cold_start_s``), and the episodes and frames
    (rows) trained on (with ``max_episodes``, the selection's)."""

    checkpoint_dir: Path
    steps: int
    final_loss: float
    samples_per_s: float
    resumed_from: int = 0
    mlflow_run_id: str = ""
    cold_start_s: float = math.nan  # from the call to the end of the first step (data loading included)
    data_source: str = ""  # batch_stream's source: "rendered frames", "memory" (decoded video) or "dataloader"
    dataset_episodes: int = 0
    dataset_frames: int = 0


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
        raise ConfigError("train.device", f"is {device!r} but CUDA is not available")
    return device


def _check_dataset(features: dict[str, Any], cameras: tuple[str, ...]) -> list[str]:
    """The image feature keys to use; raises ConfigError when the dataset lacks what the policies need."""
    for key in (OBS_STATE, ACTION):
        shape = tuple(features.get(key, {}).get("shape", ()))
        if shape != (6,):
            raise ConfigError("dataset", f"feature {key!r} must have shape (6,), got {shape or 'none'}")
    images = [k for k, v in features.items() if is_image_key(k) and v.get("dtype") in ("video", "image")]
    if cameras:
        wanted = [image_key(c) for c in cameras]
        missing = [k for k in wanted if k not in images]
        if missing:
            raise ConfigError("train.cameras", f"the dataset lacks camera features {missing} (has {images})")
        images = wanted
    if not images:
        raise ConfigError("dataset", "the policy needs at least one camera: the dataset has no observation.images.*")
    return images


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


def open_dataset(dataset_dir: Path, chunk_size: int, episodes: tuple[int, ...] | None = None) -> Any:
    """The v3.0 dataset as LeRobot reads it for a policy of one observation step: each item carries the next
    ``chunk_size`` actions; only the rows of ``episodes`` (LeRobot's ``episodes=``; None: every episode)."""
    from lerobot.datasets import LeRobotDataset, LeRobotDatasetMetadata

    fps = LeRobotDatasetMetadata(REPO_ID, root=dataset_dir).fps
    return LeRobotDataset(
        REPO_ID,
        root=dataset_dir,
        episodes=None if episodes is None else list(episodes),
        delta_timestamps={ACTION: [i / fps for i in range(chunk_size)]},
        video_backend="pyav",
    )


def batch_stream(
    data: TrainingData, images: list[str], cfg: TrainConfig, start_step: int, device: str,
    aux_labels: np.ndarray | None = None,
) -> tuple[str, Iterator[dict[str, Any]]]:  # fmt: skip
    """(source name, an endless stream of shuffled batches). Rendered units: their frames in memory
    ("rendered frames"). A LeRobot dataset: its frames decoded once into memory ("memory") when they fit in
    ``cfg.frame_cache_gb``, else (with a warning: much slower) one DataLoader, workers spawned once and kept
    ("dataloader"). Memory is ``device``'s where the frames fit beside training, else the host's (a GPU
    ``device``; the source's name then says "(host memory)"), :func:`.frame_cache.cache_home`. One order for all
    (on the CPU the same permutations). Only the rows of ``data``'s episodes (``train.max_episodes``).
    ``aux_labels`` (N, 5) (:func:`.training_data.aux_pose_labels`, rendered units only): each batch carries its
    rows' under :data:`.frame_cache.AUX_POSE`."""
    import torch

    start = start_step * cfg.batch_size
    if data.kind == "units":
        need = frame_bytes(data.frames, data.features, images)
        home = cache_home(need, device)
        if home is None:
            raise ConfigError(
                "dataset",
                f"{data.path}: the rendered frames ({need / 2**30:.1f} GiB) fit neither {device} memory nor the "
                "host's: train on fewer episodes (train.max_episodes) or cameras (train.cameras)",
            )
        extras = None if aux_labels is None else {AUX_POSE: aux_labels}
        units = decode_units(data, images, cfg.chunk_size, device, extras, host_frames=home != device)
        return _source("rendered frames", home, device, need), units.batches(cfg.batch_size, cfg.seed, start)
    dataset = open_dataset(data.path, cfg.chunk_size, data.lerobot_episodes)
    need = frame_bytes(len(dataset), dataset.meta.features, images)
    home = cache_home(need, device, cfg.frame_cache_gb * 2**30) if need > 0 else None
    if home is not None:
        decoded = DecodedDataset.decode(dataset, images, cfg.chunk_size, device, host_frames=home != device)
        return _source("memory", home, device, need), decoded.batches(cfg.batch_size, cfg.seed, start)
    if cfg.frame_cache_gb > 0:
        print(
            f"train: WARNING: the decoded frames ({need / 2**30:.1f} GiB) do not fit in frame_cache_gb "
            f"({cfg.frame_cache_gb:g} GiB) or the free {device} or host memory; streaming through LeRobot's "
            f"DataLoader ({cfg.num_workers} workers: per-frame video decoding, much slower)",
            file=sys.stderr,
            flush=True,
        )
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=cfg.batch_size,
        sampler=_EpochSampler(len(dataset), cfg.seed, start),
        num_workers=cfg.num_workers,
        pin_memory=device.startswith("cuda"),
        persistent_workers=cfg.num_workers > 0,
        multiprocessing_context="spawn" if cfg.num_workers > 0 else None,
        prefetch_factor=4 if cfg.num_workers > 0 else None,
    )
    return "dataloader", iter(loader)


def _source(name: str, home: str, device: str, need: int) -> str:
    """A batch source's name: ``name``, with "(host memory)" when its frames are held there, not on ``device``
    (said on stderr too: each batch is then gathered on the host and copied)."""
    if home == device:
        return name
    print(
        f"train: the frames ({need / 2**30:.1f} GiB) do not fit {device} memory beside training; held in host "
        "memory, each batch gathered there and copied over one batch ahead",
        file=sys.stderr,
        flush=True,
    )
    return f"{name} (host memory)"


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
    """A resumed run must train the same model: every field but steps/frequencies/tracking must match (a run
    saved before ``policy`` existed trained ACT, one saved before ``aux_pose_weight`` existed had no auxiliary
    loss: a run with it does not resume one without, whose checkpoint has no head to continue). The data a run
    trains on is part of it: ``max_episodes`` must match too (one saved before it existed trained on every
    episode), else the run's statistics, order and data size would change mid-run."""
    free = {"steps", "save_freq", "log_freq", "num_workers", "tracking_uri", "system_metrics", "log_checkpoints"}
    free |= {"time_limit_s", "frame_cache_gb"}
    saved = {"policy": "act", "aux_pose_weight": 0.0, "max_episodes": 0, **saved}
    if saved["policy"] != cfg.policy:
        raise ConfigError(
            "train.policy",
            f"the run in this directory trains {saved['policy']!r}, not {cfg.policy!r}: cannot resume it (use a new "
            "--out directory)",
        )
    now = dataclasses.asdict(cfg)
    diff = [k for k in now if k not in free and k in saved and _norm(saved[k]) != _norm(now[k])]
    if diff:
        raise ConfigError("train", f"cannot resume: the config changed ({', '.join(diff)}); use a new --out directory")


def _norm(v: Any) -> Any:
    return list(v) if isinstance(v, tuple | list) else v


def train_policy(
    dataset_dir: Path, out_dir: Path, config: TrainConfig, *, progress: ProgressCallback | None = None
) -> TrainResult:
    """Train ``config.policy`` (ACT or Diffusion Policy) on the LeRobot v3.0 dataset (or rendered units) at
    ``dataset_dir`` into ``out_dir`` for ``config.steps`` steps in total, resuming from
    ``out_dir/checkpoints/last`` when it exists.

    With ``config.time_limit_s`` > 0 the whole call (data loading, final checkpoint and its MLflow artifact
    included) ends within that many seconds: training stops early enough for the final save, whose cost is
    measured on the first save (estimated from the model size before it).

    Raises:
        ConfigError: a dataset without the features the policy needs, or a resume with a different model config
            (another policy type included).
        CheckpointError: an unreadable checkpoint to resume from.
    """
    import torch
    from lerobot.common.train_utils import load_training_state
    from lerobot.policies import make_pre_post_processors

    t_call = time.perf_counter()
    deadline = t_call + config.time_limit_s if config.time_limit_s > 0 else math.inf
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    data = open_training_data(dataset_dir, config.max_episodes)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = resolve_device(config.device)
    cuda = device.startswith("cuda")
    if cuda:
        torch.backends.cudnn.benchmark = True  # fixed shapes: the fastest convolution algorithms, chosen once
    torch.manual_seed(config.seed)
    images = _check_dataset(data.features, config.cameras)
    aux = aux_pose_labels(data) if config.aux_pose_weight > 0 else None  # refuses data without poses
    last = ckpt.last_checkpoint(out_dir)
    start_step = 0
    if last is not None:
        pretrained = last / ckpt.PRETRAINED
        _same_model(ckpt.read_json(pretrained / ckpt.SO101_CONFIG), config)
        policy = lerobot_class(config.policy).from_pretrained(str(pretrained))
        policy.config.device = device
        preprocessor, postprocessor = make_pre_post_processors(
            policy.config,
            pretrained_path=str(pretrained),
            preprocessor_overrides={"device_processor": {"device": device}},
        )
    else:
        policy_cfg = lerobot_config(config, data.features, images, device)
        policy = lerobot_class(config.policy)(policy_cfg)
        preprocessor, postprocessor = make_pre_post_processors(policy_cfg, dataset_stats=data.stats)
    policy.to(device)
    policy.train()
    model = trainable(policy, config, fresh=last is None)
    optimizer = torch.optim.AdamW(
        model.optim_groups(config.lr, config.lr_backbone),
        lr=config.lr,
        betas=model.betas,
        weight_decay=config.weight_decay,
        fused=cuda,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, config.lr_schedule, config.warmup_steps, config.steps)
    )
    if last is not None:
        try:
            start_step, optimizer, loaded = load_training_state(last, optimizer, scheduler)
        except (OSError, KeyError, ValueError) as exc:
            raise CheckpointError(f"cannot resume from {last}: {exc}") from exc
        scheduler = loaded if loaded is not None else scheduler
        model.load_training_extras(last / ckpt.TRAINING_STATE)
        match_layout(optimizer)
        torch.manual_seed(config.seed + start_step)

    n_params = sum(p.numel() for p in policy.parameters())
    params = {
        **{f"train.{k}": _norm(v) for k, v in dataclasses.asdict(config).items()},
        "dataset": str(dataset_dir.resolve()),
        "dataset.kind": data.kind,
        "dataset.episodes": data.episodes,
        "dataset.frames": data.frames,
        "dataset.fps": data.fps,
        "cameras": ",".join(images),
        "device": device,
        "parameters": n_params,
    }
    if aux is not None:  # the labels' normalisation, m (goal xy, vial xyz)
        params["aux_pose.mean"], params["aux_pose.std"] = ([round(float(x), 5) for x in v] for v in aux[1:])
    t_load = time.perf_counter()
    source, batches = batch_stream(data, images, config, start_step, device, None if aux is None else aux[0])
    params["data_source"] = source
    params["data_load_s"] = round(time.perf_counter() - t_load, 2)
    tracker = _Tracker(out_dir, config, params)
    save = _Saver(out_dir, config, model, preprocessor, postprocessor, optimizer, scheduler, n_params)
    status = "FAILED"
    final_loss = math.nan
    samples = 0
    last_dir = last
    step = start_step
    cold_start_s = math.nan
    steady_t0, steady_samples = math.nan, 0
    try:
        window_t, window_n, window_steps = time.perf_counter(), 0, 0
        sums: dict[str, Any] = {}
        amp = torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=config.use_amp)
        while step < config.steps:
            batch = preprocess(preprocessor, next(batches))
            values = train_step(model, optimizer, scheduler, batch, config.grad_clip_norm, amp)
            step += 1
            n = int(batch[ACTION].shape[0])
            samples += n
            window_n += n
            window_steps += 1
            for key, value in values.items():
                sums[key] = sums[key] + value if key in sums else value  # on the device: no host sync
            if math.isnan(cold_start_s):
                sync_device(device)
                cold_start_s = time.perf_counter() - t_call
                steady_t0, steady_samples = time.perf_counter(), samples
            out_of_time = time.perf_counter() + save.reserve_s() >= deadline
            last_step = step == config.steps or out_of_time
            if step % config.log_freq == 0 or last_step:
                totals = torch.stack(list(sums.values())).tolist()  # the one host sync per logging window
                means = {k: float(v) / window_steps for k, v in zip(sums, totals, strict=True)}
                sums, window_steps = {}, 0
                final_loss = means.pop("loss")
                if not math.isfinite(final_loss):
                    raise PolicyError(f"training diverged: loss {final_loss} at step {step}")
                now = time.perf_counter()
                rate = window_n / max(now - window_t, 1e-9)
                window_t, window_n = now, 0
                lr = float(optimizer.param_groups[0]["lr"])
                tracker.metrics(
                    {
                        "loss": final_loss,
                        "grad_norm": means.pop("grad_norm"),
                        **{f"loss/{k}": v for k, v in means.items()},
                        "lr": lr,
                        "samples_per_s": rate,
                        **_system_metrics(device),
                    },
                    step,
                )
                if progress is not None:
                    progress(TrainProgress(step, config.steps, final_loss, rate, lr))
            if step % config.save_freq == 0 or last_step:
                t_save = time.perf_counter()
                last_dir = save(step)
                steady_t0 += time.perf_counter() - t_save  # saving is not training time
                window_t += time.perf_counter() - t_save
            if out_of_time:
                break
        sync_device(device)
        steady_s = time.perf_counter() - steady_t0
        if last_dir is None:
            raise PolicyError("no checkpoint written")
        if step < config.steps:
            tracker.metrics({"stopped_by_time_limit": 1.0}, step)
        if config.log_checkpoints:
            tracker.artifacts(last_dir / ckpt.PRETRAINED, f"checkpoints/{ckpt.step_name(step)}")
        status = "FINISHED"
    finally:
        tracker.end(status if status == "FINISHED" else "KILLED")
    measured = samples - steady_samples
    rate = measured / steady_s if measured > 0 and steady_s > 0 else 0.0
    return TrainResult(last_dir, step, final_loss, rate, start_step, tracker.run_id, cold_start_s, source,
                       data.episodes, data.frames)  # fmt: skip


def preprocess(preprocessor: Any, batch: dict[str, Any]) -> dict[str, Any]:
    """``preprocessor(batch)``, carrying the batch's :data:`.frame_cache.AUX_POSE` labels (already normalised, on
    the device) past LeRobot's pipeline, which keeps only the keys it knows."""
    labels = batch.pop(AUX_POSE, None)
    out: dict[str, Any] = preprocessor(batch)
    if labels is not None:
        out[AUX_POSE] = labels
    return out


def train_step(
    model: Trainable, optimizer: Any, scheduler: Any, batch: dict[str, Any], clip: float, amp: Any
) -> dict[str, Any]:
    """One optimizer step on a preprocessed ``batch``; the loss terms and gradient norm as float32 tensors on the
    device (reading them would wait for the GPU: the caller does so once per logging window)."""
    import torch

    with amp:
        loss, parts = model.loss(batch)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(list(model.parameters()), clip, foreach=True)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return {k: v.float() for k, v in (("loss", loss.detach()), ("grad_norm", grad_norm), *parts.items())}


def sync_device(device: str) -> None:
    """Wait for the device's queued work (CUDA); nothing on the CPU."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


class _Saver:
    """Writes checkpoint ``step`` (LeRobot's layout, :mod:`.checkpoints`) and keeps what saving costs, so that a
    time-limited run stops early enough for its final save and the checkpoint's MLflow artifact."""

    def __init__(
        self, out_dir: Path, config: TrainConfig, model: Trainable, pre: Any, post: Any, opt: Any, sched: Any,
        n_params: int,
    ) -> None:  # fmt: skip
        self.out_dir, self.config, self.model = out_dir, config, model
        self.pre, self.post, self.opt, self.sched = pre, post, opt, sched
        # before any save: model + two Adam moments in float32, written and copied at >= 100 MB/s
        self.cost_s = 3 * 4 * n_params / 100e6 + 2.0

    def reserve_s(self) -> float:
        """Seconds to keep free at the end: the final save, the artifact copy and a margin."""
        return 2.0 * self.cost_s + 2.0 if self.config.time_limit_s > 0 else 0.0

    def __call__(self, step: int) -> Path:
        from lerobot.common.train_utils import save_training_state

        t0 = time.perf_counter()
        partial = ckpt.partial_dir(self.out_dir, step)
        pretrained = partial / ckpt.PRETRAINED
        with self.model.exported() as policy:
            policy.save_pretrained(pretrained)
        self.pre.save_pretrained(pretrained)
        self.post.save_pretrained(pretrained)
        (pretrained / ckpt.SO101_CONFIG).write_text(
            json.dumps({k: _norm(v) for k, v in dataclasses.asdict(self.config).items()}, indent=2)
        )
        save_training_state(
            partial, step, self.opt, self.sched, num_processes=1, batch_size=self.config.batch_size,
            optim_state_dict=contiguous_state(self.opt),
        )  # fmt: skip
        self.model.save_training_extras(partial / ckpt.TRAINING_STATE)
        final = ckpt.commit(self.out_dir, partial, step)
        self.cost_s = time.perf_counter() - t0
        return final
