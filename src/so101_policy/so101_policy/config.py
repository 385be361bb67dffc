"""``config/train.yaml``, ``config/eval.yaml``, ``config/policy.yaml`` → frozen dataclasses, validated.

Each YAML file is a flat mapping of the dataclass's fields (unknown keys and wrong types are errors naming the
field, e.g. ``train.batch_size``). Units are in the field names or docstrings.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from so101_core.config import ConfigError as FieldError
from so101_core.config import Fields, config_dir, load_yaml
from so101_core.robot_spec import CAMERA_NAMES

from .errors import CheckpointError, ConfigError
from .inference_options import InferenceOptions
from .schedule import SCHEDULES

BACKBONE_NORMS = ("frozen", "batch")  # see so101_policy.act_training
POLICIES = ("act", "diffusion")  # see so101_policy.policy_types
NOISE_SCHEDULERS = ("DDIM", "DDPM")
ACT_FIELDS = ("dim_model", "dim_feedforward", "n_heads", "n_encoder_layers", "n_decoder_layers", "latent_dim",
              "kl_weight", "dropout", "backbone_norm", "aux_pose_weight")  # fmt: skip
DIFFUSION_GROUPS = 8  # the UNet's GroupNorm groups (LeRobot's n_groups): each width a multiple of it


@dataclass(frozen=True)
class TrainConfig:
    """Training of a LeRobot policy (offline). ``device`` auto = CUDA when present, else CPU.

    ``policy`` (LeRobot's ``--policy.type``, :mod:`.policy_types`): ``act`` (ACT) or ``diffusion`` (Diffusion
    Policy). Both see one observation (LeRobot's ``n_obs_steps`` = 1: the current state and frames, all our data
    stream and the policy server provide) and predict ``chunk_size`` actions (ACT's ``chunk_size``, Diffusion
    Policy's ``horizon`` = ``n_action_steps``). The ACT fields (:data:`ACT_FIELDS`) only shape ACT, the
    ``diffusion_*`` fields only Diffusion Policy: a field of the other policy set away from its default is an
    error, not ignored. Diffusion Policy (LeRobot's ``DiffusionConfig``, ``n_obs_steps`` 1): ``diffusion_down_dims``
    the 1-D UNet's widths per level (LeRobot's default (512, 1024, 2048); each a multiple of 8, its GroupNorm
    groups; ``chunk_size`` must be a multiple of 2 ** len(down_dims), LeRobot's rule);
    ``diffusion_train_timesteps`` noising steps of training; ``diffusion_noise_scheduler`` ``DDIM`` or ``DDPM``
    (the same training loss; how a chunk is sampled at inference) with ``diffusion_inference_steps`` denoising
    steps per chunk (each a UNet pass: the inference latency); ``diffusion_keypoints`` the spatial-softmax
    keypoints per camera. Its ResNets start from random weights with GroupNorm (LeRobot's rule without
    pretrained weights), one per camera, without LeRobot's random crop (``image_shift_px`` is our augmentation
    for both policies); the loss is masked where a chunk runs past its episode's end. The optimizer is AdamW
    for both (``weight_decay`` decoupled): ``lr`` for the policy, ``lr_backbone`` for its ResNet(s) (LeRobot's
    Diffusion Policy has one lr for all: set both alike for that), betas the policy's LeRobot preset ((0.95,
    0.999) for Diffusion Policy, (0.9, 0.999) for ACT).

    ``chunk_size``: actions per predicted chunk (30 Hz steps); ``cameras``: which dataset cameras the policy
    sees ([] = every ``observation.images.*`` feature); ``save_freq`` / ``log_freq`` in steps;
    ``tracking_uri`` "" = ``sqlite:///<out>/mlflow.db``; ``system_metrics``: MLflow CPU/GPU/memory sampling;
    ``time_limit_s``: stop (with a checkpoint) after this much training time in this invocation (0 = none);
    ``frame_cache_gb``: decode the whole dataset once into memory (the training GPU's where the frames fit beside
    training, else the host's: :func:`.frame_cache.cache_home`) when its frames fit in this many GiB (much faster
    than per-frame video decoding), else stream through LeRobot's DataLoader (0 = always);
    ``use_amp``: the forward pass under bfloat16 autocast (no loss scaling needed); ``lr_schedule``
    (:mod:`.schedule`): ``constant`` or ``cosine`` to 0 at ``steps``, each after ``warmup_steps`` of linear
    warm-up; ``backbone_norm`` (ACT, :mod:`.act_training`): ``frozen`` (LeRobot's FrozenBatchNorm2d, the identity with
    a random-init backbone) or ``batch`` (trained BatchNorm2d; checkpoints still load in stock LeRobot);
    ``image_shift_px``: training images shifted by up to this many px per sample (:mod:`.augment`; 0 = none).
    ``aux_pose_weight`` (ACT, :mod:`.aux_pose`; 0 = off): weight of an auxiliary, training-only L1 loss: a small
    head on ACT's transformer-encoder output regresses the episode's goal (the vial's final xy, world frame) and the
    vial's current xyz, normalised over the dataset, from the simulator's recorded vial pose. It needs rendered
    units (``replay.npz`` with ``object_pose/vial``; a LeRobot v3.0 dataset has no object poses); the head is saved
    with the training state, never in ``pretrained_model`` (a stock ACT checkpoint).
    ``max_episodes`` (0 = all): train on the dataset's first N episodes only (LeRobot's ``--dataset.episodes``
    [0, N); of rendered units the first N in sorted order), e.g. to compare data sizes on one dataset in a sweep.
    """

    steps: int = 20000
    batch_size: int = 8
    num_workers: int = 4
    lr: float = 1e-5
    lr_backbone: float = 1e-5
    weight_decay: float = 1e-4
    grad_clip_norm: float = 10.0
    chunk_size: int = 16
    dim_model: int = 512
    dim_feedforward: int = 3200
    n_heads: int = 8
    n_encoder_layers: int = 4
    n_decoder_layers: int = 1
    latent_dim: int = 32
    kl_weight: float = 10.0
    dropout: float = 0.1
    vision_backbone: str = "resnet18"
    cameras: tuple[str, ...] = ()
    seed: int = 1000
    device: str = "auto"
    use_amp: bool = False
    save_freq: int = 2000
    log_freq: int = 50
    tracking_uri: str = ""
    experiment: str = "so101-act"
    system_metrics: bool = True
    log_checkpoints: bool = True
    time_limit_s: float = 0.0
    frame_cache_gb: float = 8.0
    lr_schedule: str = "constant"
    warmup_steps: int = 0
    backbone_norm: str = "frozen"
    image_shift_px: int = 0
    aux_pose_weight: float = 0.0
    max_episodes: int = 0
    policy: str = "act"
    diffusion_down_dims: tuple[int, ...] = (512, 1024, 2048)
    diffusion_train_timesteps: int = 100
    diffusion_noise_scheduler: str = "DDIM"
    diffusion_inference_steps: int = 10
    diffusion_keypoints: int = 32

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise _invalid("train.policy", f"must be one of {list(POLICIES)}, got {self.policy!r}")
        if self.lr_schedule not in SCHEDULES:
            raise _invalid("train.lr_schedule", f"must be one of {list(SCHEDULES)}, got {self.lr_schedule!r}")
        if self.backbone_norm not in BACKBONE_NORMS:
            raise _invalid("train.backbone_norm", f"must be one of {list(BACKBONE_NORMS)}, got {self.backbone_norm!r}")
        if not 0 <= self.warmup_steps < self.steps:
            raise _invalid("train.warmup_steps", f"must be in [0, steps), got {self.warmup_steps}")
        if self.frame_cache_gb < 0:
            raise _invalid("train.frame_cache_gb", f"must be >= 0 (0 = never), got {self.frame_cache_gb}")
        if self.image_shift_px < 0:
            raise _invalid("train.image_shift_px", f"must be >= 0 (0 = none), got {self.image_shift_px}")
        if not self.aux_pose_weight >= 0:
            raise _invalid("train.aux_pose_weight", f"must be >= 0 (0 = off), got {self.aux_pose_weight}")
        if self.max_episodes < 0:
            raise _invalid("train.max_episodes", f"must be >= 0 (0 = every episode), got {self.max_episodes}")
        if self.time_limit_s < 0:
            raise _invalid("train.time_limit_s", f"must be >= 0 (0 = none), got {self.time_limit_s}")
        _positive(self, "train", ("steps", "batch_size", "chunk_size", "dim_model", "dim_feedforward", "n_heads"))
        _positive(self, "train", ("n_encoder_layers", "n_decoder_layers", "latent_dim", "save_freq", "log_freq"))
        _positive(self, "train", ("lr", "lr_backbone", "grad_clip_norm"))
        if self.num_workers < 0 or self.weight_decay < 0 or self.kl_weight < 0 or not 0 <= self.dropout < 1:
            raise ConfigError("train", "num_workers, weight_decay, kl_weight must be >= 0 and dropout in [0, 1)")
        if self.dim_model % self.n_heads:
            raise _invalid("train.dim_model", f"({self.dim_model}) must be a multiple of n_heads ({self.n_heads})")
        if self.device not in ("auto", "cpu", "cuda") and not self.device.startswith("cuda:"):
            raise _invalid("train.device", f"must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        _cameras(self.cameras, "train")
        self._check_diffusion()
        self._refuse_other_policy_fields()

    def _check_diffusion(self) -> None:
        if self.diffusion_noise_scheduler not in NOISE_SCHEDULERS:
            raise _invalid(
                "train.diffusion_noise_scheduler",
                f"must be one of {list(NOISE_SCHEDULERS)}, got {self.diffusion_noise_scheduler!r}",
            )
        dims = self.diffusion_down_dims
        if not dims or any(d <= 0 or d % DIFFUSION_GROUPS for d in dims):
            raise _invalid(
                "train.diffusion_down_dims",
                f"must be one or more widths, each a positive multiple of {DIFFUSION_GROUPS} (the UNet's GroupNorm "
                f"groups), got {list(dims)}",
            )
        _positive(self, "train", ("diffusion_train_timesteps", "diffusion_keypoints"))
        if not 0 < self.diffusion_inference_steps <= self.diffusion_train_timesteps:
            raise _invalid(
                "train.diffusion_inference_steps",
                f"must be in [1, diffusion_train_timesteps = {self.diffusion_train_timesteps}], "
                f"got {self.diffusion_inference_steps}",
            )
        factor = 2 ** len(dims)
        if self.policy == "diffusion" and self.chunk_size % factor:
            raise _invalid(
                "train.chunk_size",
                f"({self.chunk_size}) must be a multiple of 2 ** len(diffusion_down_dims) = {factor} for policy "
                f"diffusion (the UNet halves the chunk at each of its {len(dims)} levels; LeRobot's rule): "
                f"change chunk_size or diffusion_down_dims",
            )

    def _refuse_other_policy_fields(self) -> None:
        """A field that only shapes the other policy, set away from its default, is a mistake: refuse it."""
        others = (
            ACT_FIELDS
            if self.policy == "diffusion"
            else tuple(f.name for f in dataclasses.fields(self) if f.name.startswith("diffusion_"))
        )
        default = type(self).__dataclass_fields__
        for name in others:
            if getattr(self, name) != default[name].default:
                raise _invalid(
                    f"train.{name}",
                    f"shapes {'ACT' if self.policy == 'diffusion' else 'Diffusion Policy'} only, but policy is "
                    f"{self.policy!r}: remove it (or set policy accordingly)",
                )


@dataclass(frozen=True)
class EvalConfig:
    """Evaluation in the twin through the real graph (sim node + policy node + policy server as processes).

    ``episodes`` randomized episodes from seeds ``seed, seed + 1, ...``; each lasts at most ``episode_s`` of sim
    time; ``horizon`` actions per chunk are executed (16 sim), a new chunk every ``replan_steps`` (0 = horizon / 2);
    ``blend_alpha``: EMA weight of the newer chunk; ``temporal_ensemble_coeff``: 0 = off (the EMA), > 0 = ACT's
    temporal ensemble instead (every prediction made for a step averaged with weights ``exp(-coeff * k)``, k = 0 the
    oldest; ACT uses 0.01; ``blend_alpha`` is then unused), in both evaluators; ``real_time_factor`` speeds sim and
    policy node up together; ``width``/``height`` px of the rendered cameras (0 = the checkpoint's image size);
    ``videos`` = number of episodes with an MP4 and a tracking plot (the first K, then the first success and the
    first failure after them; 0: none). FRAME references (DTW, ATE, RTE, action MSE) are the scripted expert's
    rollouts on the same seeds. ``dr_profile``: a ``dr.yaml`` profile (e.g. ``wide``), "" = the base ranges;
    ``graphs``: evaluation graphs run side by side, the seeds split between them. ``scene_seeds``: the episodes'
    scene seeds instead of ``seed + i`` (e.g. the training demos' ``scene_seed``s: does the policy solve the scenes
    it was trained on?); at most ``episodes`` of them are used. ``device``, ``precision``, ``cuda_graph``: how the
    checkpoint runs, on the graph's policy server (``so101 serve --device --precision --cuda-graph``) and in the
    fast evaluator (:class:`~.inference_options.InferenceOptions`).
    """

    episodes: int = 50
    seed: int = 1984
    episode_s: float = 20.0
    horizon: int = 16
    blend_alpha: float = 0.2
    temporal_ensemble_coeff: float = 0.0
    replan_steps: int = 0
    real_time_factor: float = 1.0
    cameras: tuple[str, ...] = ()
    width: int = 0
    height: int = 0
    camera_rate_hz: float = 30.0
    videos: int = 3
    video_fps: float = 10.0
    task: str = "put the vial in the rack"
    server_timeout_ms: int = 2000
    device: str = "auto"
    precision: str = "fp32"
    cuda_graph: bool = False
    tracking_uri: str = ""
    experiment: str = "so101-eval"
    randomize: bool = True
    dr_profile: str = ""
    graphs: int = 1
    scene_seeds: tuple[int, ...] = ()

    def episode_seed(self, index: int) -> int:
        """The scene seed of episode ``index`` (0-based)."""
        return self.scene_seeds[index] if self.scene_seeds else self.seed + index

    def inference(self) -> InferenceOptions:
        """How the checkpoint runs: ``precision`` and ``cuda_graph`` (no ``torch.compile`` in an evaluation)."""
        return InferenceOptions(self.precision, cuda_graph=self.cuda_graph)

    def __post_init__(self) -> None:
        if self.scene_seeds and len(self.scene_seeds) < self.episodes:
            raise _invalid("eval.scene_seeds", f"holds {len(self.scene_seeds)} seeds for {self.episodes} episodes")
        _positive(self, "eval", ("episodes", "episode_s", "horizon", "real_time_factor", "camera_rate_hz", "graphs"))
        _positive(self, "eval", ("video_fps", "server_timeout_ms"))
        _chunk_merging(self.blend_alpha, self.temporal_ensemble_coeff, "eval")
        for name in ("precision", "cuda_graph"):
            try:  # InferenceOptions checks each value; the error names the eval field
                InferenceOptions(**{name: getattr(self, name)})
            except CheckpointError as exc:
                raise _invalid(f"eval.{name}", str(exc)) from None
        if self.videos < 0 or self.width < 0 or self.height < 0 or self.replan_steps < 0:
            raise ConfigError("eval", "videos, width, height, replan_steps must be >= 0")
        _cameras(self.cameras, "eval")


@dataclass(frozen=True)
class PolicyNodeConfig:
    """The 30 Hz policy node (``config/policy.yaml``; the node's ROS parameters default to these).

    ``horizon``: actions of each chunk executed (8 real, 16 sim); ``replan_steps``: a new chunk is requested every
    this many steps (0 = when the plan runs out); ``blend_alpha``: EMA weight of the newer chunk on the overlap;
    ``temporal_ensemble_coeff``: 0 = off (the EMA), > 0 = ACT's temporal ensemble instead (every prediction made for
    a step averaged with weights ``exp(-coeff * k)``, k = 0 the oldest; ACT uses 0.01; ``blend_alpha`` is then
    unused: :mod:`so101_policy.blending`); ``stale_joint_s`` / ``stale_camera_s``: inputs older than this hold the
    arm (s of the node clock, sim seconds under ``use_sim_time``; ``server_timeout_ms`` is wall-clock);
    ``max_step_rad`` (5 arm joints): a chunk whose first action is further than this from the last command (or, with
    none, the measured position) is refused. wrist_roll gets more: in the demos its command leads the measured joint
    by up to 0.8 rad. Rows of a chunk outside the joint range are clamped into it; a value more than
    ``max_excursion_rad`` outside is a broken policy and refuses the chunk (:mod:`so101_policy.admission`);
    ``refusal_limit`` chunks refused in a row are a refusal loop: the node holds and asks no more until ``~/start``.
    """

    rate_hz: float = 30.0
    horizon: int = 8
    horizon_sim: int = 16
    replan_steps: int = 0
    blend_alpha: float = 0.2
    temporal_ensemble_coeff: float = 0.0
    cameras: tuple[str, ...] = CAMERA_NAMES
    task: str = "put the vial in the rack"
    server_host: str = "127.0.0.1"
    server_port: int = 5555
    server_timeout_ms: int = 500
    stale_joint_s: float = 0.25
    stale_camera_s: float = 0.5
    max_step_rad: tuple[float, ...] = (0.5, 0.5, 0.5, 0.5, 1.2)
    max_excursion_rad: float = 0.5
    refusal_limit: int = 5
    autostart: bool = False

    def __post_init__(self) -> None:
        _positive(self, "policy", ("rate_hz", "horizon", "horizon_sim", "server_timeout_ms", "stale_joint_s"))
        _positive(self, "policy", ("stale_camera_s", "refusal_limit"))
        if self.max_excursion_rad < 0:
            raise _invalid("policy.max_excursion_rad", f"must be >= 0, got {self.max_excursion_rad}")
        if len(self.max_step_rad) != 5 or not all(v > 0 for v in self.max_step_rad):
            raise _invalid("policy.max_step_rad", f"needs 5 values > 0 (arm joints), got {list(self.max_step_rad)}")
        _chunk_merging(self.blend_alpha, self.temporal_ensemble_coeff, "policy")
        if self.replan_steps < 0:
            raise _invalid("policy.replan_steps", f"must be >= 0, got {self.replan_steps}")
        _cameras(self.cameras, "policy")


def _invalid(field: str, problem: str) -> ConfigError:
    """The error of a bad ``field`` (dotted, e.g. ``train.lr``): it reads "<field>: <problem>"."""
    return ConfigError(field, problem)


def _positive(cfg: object, root: str, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(cfg, name)
        if not value > 0:
            raise _invalid(f"{root}.{name}", f"must be > 0, got {value}")


def _chunk_merging(blend_alpha: float, temporal_ensemble_coeff: float, root: str) -> None:
    """How chunks merge into the plan (the evaluation's and the policy node's: :mod:`.blending`)."""
    if not 0 < blend_alpha <= 1:
        raise _invalid(f"{root}.blend_alpha", f"must be in (0, 1], got {blend_alpha}")
    if not temporal_ensemble_coeff >= 0:
        raise _invalid(f"{root}.temporal_ensemble_coeff", f"must be >= 0 (0 = off), got {temporal_ensemble_coeff}")


def _cameras(cameras: tuple[str, ...], root: str) -> None:
    unknown = [c for c in cameras if c not in CAMERA_NAMES]
    if unknown or len(set(cameras)) != len(cameras):
        raise _invalid(f"{root}.cameras", f"must be distinct names of {list(CAMERA_NAMES)}, got {list(cameras)}")


_PLURAL = {str: "strings", int: "integers", float: "numbers"}


def _is(value: Any, item: type) -> bool:
    """``value`` is an ``item`` (str, int or float) as YAML writes it (a bool is not a number)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) if item is float else isinstance(value, item)


def _read(fields: Fields, cls: type[Any]) -> Any:
    """Every dataclass field of ``cls`` from ``fields`` (default when absent), typed by its annotation."""
    defaults = cls()
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        default, hint = getattr(defaults, f.name), hints[f.name]
        if not fields.has(f.name):
            fields.raw(f.name, default)
            continue
        raw = fields.raw(f.name)
        if hint is bool:
            if not isinstance(raw, bool):
                raise FieldError(fields.field(f.name), f"expected true/false, got {raw!r}")
            values[f.name] = raw
        elif hint is int:
            values[f.name] = fields.integer(f.name)
        elif hint is float:
            values[f.name] = fields.num(f.name)
        elif hint is str:
            values[f.name] = "" if raw is None else fields.text(f.name)
        elif typing.get_origin(hint) is tuple or isinstance(hint, types.GenericAlias):
            item = typing.get_args(hint)[0]
            if item is float and default:
                values[f.name] = fields.vec(f.name, len(default))
            elif not isinstance(raw, list) or not all(_is(x, item) for x in raw):
                raise FieldError(fields.field(f.name), f"expected a list of {_PLURAL[item]}, got {raw!r}")
            else:
                values[f.name] = tuple(float(x) if item is float else x for x in raw)
        else:  # pragma: no cover - every field above is one of these types
            raise TypeError(f"unsupported field type {hint} for {f.name}")
    fields.finish()
    return cls(**values)


def _load[T](cls: type[T], path: str | Path | None, name: str) -> T:
    try:
        fields = load_yaml(path, name) if path else _default_fields(name)
        return typing.cast(T, _read(fields, cls))
    except FieldError as exc:
        raise ConfigError(exc.field, exc.message, file=exc.file) from None


def _default_fields(name: str) -> Fields:
    path = config_dir() / f"{name}.yaml"
    return load_yaml(path, name) if path.is_file() else Fields({}, name)


def parse_config[T](cls: type[T], data: Mapping[str, Any], name: str) -> T:
    """Validate an already-parsed mapping for ``cls`` (same rules as the loaders)."""
    try:
        return typing.cast(T, _read(Fields(data, name), cls))
    except FieldError as exc:
        raise ConfigError(exc.field, exc.message, file=exc.file) from None


def parse_train_config(data: Mapping[str, Any]) -> TrainConfig:
    """A ``train`` mapping (as in train.yaml) validated; ConfigError names the field (``train.<key>``)."""
    return parse_config(TrainConfig, data, "train")


def parse_eval_config(data: Mapping[str, Any]) -> EvalConfig:
    """An ``eval`` mapping (as in eval.yaml) validated; ConfigError names the field (``eval.<key>``)."""
    return parse_config(EvalConfig, data, "eval")


def load_train_config(path: str | Path | None = None) -> TrainConfig:
    """``train.yaml`` (default: the config directory's, else the defaults)."""
    return _load(TrainConfig, path, "train")


def load_eval_config(path: str | Path | None = None) -> EvalConfig:
    """``eval.yaml`` (default: the config directory's, else the defaults)."""
    return _load(EvalConfig, path, "eval")


def load_policy_config(path: str | Path | None = None) -> PolicyNodeConfig:
    """``policy.yaml`` (default: the config directory's, else the defaults)."""
    return _load(PolicyNodeConfig, path, "policy")
