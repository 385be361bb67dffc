"""``config/dataset.yaml`` → :class:`DatasetConfig` (frozen); every error names the field."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from so101_core.config import Fields, config_dir, load_yaml
from so101_core.robot_spec import CAMERA_NAMES

from .errors import DatasetConfigError
from .render import READBACKS

VCODECS = ("h264", "hevc", "libsvtav1", "libaom-av1")
IMAGE_STATS = ("exact", "lerobot")


@dataclass(frozen=True)
class VideoConfig:
    """Encoder settings (lerobot ``RGBEncoderConfig`` fields); ``encoder_threads`` 0 = codec default.

    ``image_stats``: how the v3.0 writer computes each camera's ``meta/stats.json`` entry while streaming —
    ``exact`` (default): 256-level pixel counts of every frame, statistics as lerobot's ``get_feature_stats``
    gives for all of them in one batch (:mod:`.image_stats`); ``lerobot``: lerobot's own streaming encoder
    (``RunningQuantileStats`` per frame, ≈ 1.7 ms CPU per camera frame). Same videos either way.
    """

    vcodec: str = "h264"
    pix_fmt: str = "yuv420p"
    crf: int = 23
    g: int = 2
    preset: str | None = "veryfast"
    encoder_threads: int = 0
    queue_frames: int = 60
    image_stats: str = "exact"


@dataclass(frozen=True)
class RenderConfig:
    gl: str = "auto"
    visual_dr: bool = True
    shadows: bool = True
    random_seed: int = 0
    keep_frames: bool = False  # each unit also keeps its raw renders (frames.npz) for training without video
    frames_per_pass: int = 1  # consecutive frames drawn into one buffer and read back at once (fewer GPU syncs)
    readback: str = "rgb"  # rgb (mjr_readPixels) | rgba | bgra (glReadPixels in 4 channels): the same pixels


@dataclass(frozen=True)
class DatasetConfig:
    """The dataset stage's settings (units: px, Hz); see ``config/dataset.yaml``."""

    fps: int = 30
    width: int = 640
    height: int = 480
    cameras: tuple[str, ...] = CAMERA_NAMES
    workers: int = 1
    repo_id: str = "local/so101_sim"
    robot_type: str = "so_follower"
    task: str = ""
    on_bad_demo: str = "skip"
    render: RenderConfig = field(default_factory=RenderConfig)
    video: VideoConfig = field(default_factory=VideoConfig)
    bags_enabled: bool = True
    bag_image_stride: int = 1
    report_enabled: bool = True

    def with_overrides(self, **kw: Any) -> DatasetConfig:
        """A copy with top-level fields replaced (``None`` values ignored), validated again."""
        cfg = replace(self, **{k: v for k, v in kw.items() if v is not None})
        validate(cfg)
        return cfg


def _bool(f: Fields, key: str, default: bool) -> bool:
    v = f.raw(key, default)
    if not isinstance(v, bool):
        raise DatasetConfigError(f.field(key), f"expected true/false, got {v!r}")
    return v


def validate(cfg: DatasetConfig) -> None:
    """Cross-field checks shared by the YAML loader and CLI overrides."""
    if not 8 <= cfg.width <= 4096 or not 8 <= cfg.height <= 4096:
        raise DatasetConfigError("dataset.width", f"must be 8..4096 px, got {cfg.width}x{cfg.height}")
    if cfg.width % 2 or cfg.height % 2:
        raise DatasetConfigError(
            "dataset.width", f"width and height must be even (yuv420p), got {cfg.width}x{cfg.height}"
        )
    if not cfg.cameras or len(set(cfg.cameras)) != len(cfg.cameras):
        raise DatasetConfigError("dataset.cameras", f"need distinct names, got {list(cfg.cameras)}")
    unknown = [c for c in cfg.cameras if c not in CAMERA_NAMES]
    if unknown:
        raise DatasetConfigError("dataset.cameras", f"unknown {unknown} (known: {list(CAMERA_NAMES)})")
    if cfg.workers < 1:
        raise DatasetConfigError("dataset.workers", f"must be >= 1, got {cfg.workers}")
    if cfg.on_bad_demo not in ("skip", "stop"):
        raise DatasetConfigError("dataset.on_bad_demo", f"must be skip or stop, got {cfg.on_bad_demo!r}")


def load_dataset_config(path: Path | None = None) -> DatasetConfig:
    """Load and validate ``dataset.yaml`` (default: the config directory's)."""
    return _parse(load_yaml(path or config_dir() / "dataset.yaml", "dataset", error=DatasetConfigError))


def parse_dataset_config(data: Mapping[str, Any]) -> DatasetConfig:
    """A ``dataset`` mapping (as in dataset.yaml) validated; DatasetConfigError names the field."""
    return _parse(Fields(data, "dataset", error=DatasetConfigError))


def _parse(f: Fields) -> DatasetConfig:
    d = DatasetConfig()  # the defaults
    cams = f.raw("cameras", list(d.cameras))
    if not isinstance(cams, list) or not all(isinstance(c, str) for c in cams):
        raise DatasetConfigError(f.field("cameras"), f"expected a list of camera names, got {cams!r}")
    r, v, b, rep = f.sub("render", {}), f.sub("video", {}), f.sub("bags", {}), f.sub("report", {})
    preset = v.raw("preset", d.video.preset)
    if preset is not None and not isinstance(preset, str | int):
        raise DatasetConfigError(v.field("preset"), f"expected a string, an integer or null, got {preset!r}")
    cfg = DatasetConfig(
        fps=f.integer("fps", d.fps, lo=1, hi=1000),
        width=f.integer("width", d.width, lo=8, hi=4096),
        height=f.integer("height", d.height, lo=8, hi=4096),
        cameras=tuple(cams),
        workers=f.integer("workers", d.workers, lo=1, hi=256),
        repo_id=f.text("repo_id", d.repo_id),
        robot_type=f.text("robot_type", d.robot_type),
        task=str(f.raw("task", d.task) or ""),
        on_bad_demo=f.text("on_bad_demo", d.on_bad_demo, choices=("skip", "stop")),
        render=RenderConfig(
            gl=r.text("gl", d.render.gl, choices=("auto", "egl", "osmesa")),
            visual_dr=_bool(r, "visual_dr", d.render.visual_dr),
            shadows=_bool(r, "shadows", d.render.shadows),
            random_seed=r.integer("random_seed", d.render.random_seed, lo=0),
            keep_frames=_bool(r, "keep_frames", d.render.keep_frames),
            frames_per_pass=r.integer("frames_per_pass", d.render.frames_per_pass, lo=1, hi=256),
            readback=r.text("readback", d.render.readback, choices=READBACKS),
        ),
        video=VideoConfig(
            vcodec=v.text("vcodec", d.video.vcodec, choices=VCODECS),
            pix_fmt=v.text("pix_fmt", d.video.pix_fmt),
            crf=v.integer("crf", d.video.crf, lo=0, hi=63),
            g=v.integer("g", d.video.g, lo=1, hi=1000),
            preset=None if preset is None else str(preset),
            encoder_threads=v.integer("encoder_threads", d.video.encoder_threads, lo=0, hi=256),
            queue_frames=v.integer("queue_frames", d.video.queue_frames, lo=2, hi=100000),
            image_stats=v.text("image_stats", d.video.image_stats, choices=IMAGE_STATS),
        ),
        bags_enabled=_bool(b, "enabled", d.bags_enabled),
        bag_image_stride=b.integer("image_stride", d.bag_image_stride, lo=1),
        report_enabled=_bool(rep, "enabled", d.report_enabled),
    )
    for sub in (r, v, b, rep, f):
        sub.finish()
    validate(cfg)
    return cfg
