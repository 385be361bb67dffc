"""One rendered episode unit (``<out>/episodes/episode_NNNNNN``, laid out as :mod:`so101_core.episode_units` says):
its provenance and the renderer that builds it in a worker process or Ray actor (:class:`UnitRenderer`)."""

from __future__ import annotations

import os
import shutil
import time
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.atomic import write_json
from so101_core.episode_units import EPISODE_FILE, FRAMES_FILE, REPLAY_FILE, unit_name, write_frames

from .config import DatasetConfig


def provenance_source(demo_source: str) -> str:
    """seed | generated (the mix adds real)."""
    return "generated" if demo_source == "skillgen" else "seed"


def render_seed(demo_seed: int | None, demo_file: str, base: int) -> int:
    """The demo's scene seed, or one derived from (base, file name) when it carries none."""
    if demo_seed is not None:
        return int(demo_seed)
    return int(np.random.SeedSequence([base, zlib.crc32(demo_file.encode())]).generate_state(1)[0])


def seed_ids(sources: Any) -> list[str]:
    """The source seeds a SkillGen demo was built from (its ``extra.sources[*].seed``), sorted."""
    if not isinstance(sources, list):
        return []
    return sorted({str(s["seed"]) for s in sources if isinstance(s, dict) and s.get("seed") is not None})


@dataclass(frozen=True)
class UnitResult:
    index: int
    demo: str
    ok: bool
    reason: str | None = None
    detail: str = ""
    frames: int = 0
    times: dict[str, float] | None = None


class UnitRenderer:
    """Per process: one :class:`EpisodeRenderer` reused for every episode this process renders."""

    def __init__(self, cfg: DatasetConfig) -> None:
        from so101_core.sim.config import load_task_config

        from .render import EpisodeRenderer, select_gl

        select_gl(cfg.render.gl)
        self.cfg = cfg
        self.task = cfg.task or load_task_config().description
        self.renderer = EpisodeRenderer(
            cfg.width,
            cfg.height,
            cfg.cameras,
            visual_dr=cfg.render.visual_dr,
            shadows=cfg.render.shadows,
            frames_per_pass=cfg.render.frames_per_pass,
            readback=cfg.render.readback,
        )

    def render_unit(self, index: int, demo_path: Path, root: Path, demos_dir: Path) -> UnitResult:
        """Render demo ``demo_path`` into ``root/episode_<index>``; never raises for a bad demo."""
        from so101_core.seeds.format import SeedFormatError, load_seed

        rel = str(demo_path.relative_to(demos_dir)) if demo_path.is_relative_to(demos_dir) else str(demo_path)
        try:
            demo = load_seed(demo_path)
        except SeedFormatError as exc:
            return UnitResult(index, rel, False, "bad_demo_file", str(exc))
        if not demo.success:
            return UnitResult(index, rel, False, "unsuccessful_demo", f"{demo_path}: success is false")
        tmp = root / ".tmp" / f"{unit_name(index)}.{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            result = self._render(index, rel, demo, tmp)
            os.replace(tmp, root / unit_name(index))
            return result
        except Exception as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            return UnitResult(index, rel, False, "render_error", f"{demo_path}: {exc}\n{traceback.format_exc(limit=3)}")

    def _render(self, index: int, rel: str, demo: Any, tmp: Path) -> UnitResult:
        from so101_core.lerobot_units import to_lerobot

        from .lerobot_v3 import ShardWriter
        from .render import RenderTimes, resample

        cfg = self.cfg
        t0 = time.perf_counter()
        replay = resample(demo.t, demo.joint_positions, demo.actions, dict(demo.object_poses), demo.control_hz, cfg.fps)
        seed = render_seed(demo.seed, rel, cfg.render.random_seed)
        dr = self.renderer.prepare(seed if cfg.render.visual_dr else None)
        state, action = to_lerobot(replay.q).astype(np.float32), to_lerobot(replay.action).astype(np.float32)
        before = RenderTimes(**vars(self.renderer.renderer.times))
        t1 = time.perf_counter()
        writer = ShardWriter(tmp / "lerobot", cfg)
        add_s = 0.0
        t_frames = time.perf_counter()
        kept: dict[str, list[np.ndarray]] = {cam: [] for cam in cfg.cameras} if cfg.render.keep_frames else {}
        try:
            for j, images in enumerate(self.renderer.frames(replay)):
                a0 = time.perf_counter()
                for cam, frames in kept.items():
                    frames.append(np.array(images[cam], dtype=np.uint8, copy=True))
                writer.add(images, state[j], action[j], self.task)
                add_s += time.perf_counter() - a0
            t2 = time.perf_counter()
            writer.finish()
        except BaseException:
            writer.abort()  # stop lerobot's encoder threads; the unit directory is dropped by the caller
            raise
        t3 = time.perf_counter()
        rt = self.renderer.renderer.times
        arrays: dict[str, Any] = {"t": replay.t, "q": replay.q, "action": replay.action}
        arrays.update({f"object_pose/{k}": v for k, v in replay.objects.items()})
        np.savez(str(tmp / REPLAY_FILE), **arrays)
        if kept:
            stacked: dict[str, Any] = {cam: np.stack(frames) for cam, frames in kept.items()}
            write_frames(tmp / FRAMES_FILE, stacked)
        extra = dict(demo.extra)
        times = {
            "prepare_s": t1 - t0,
            "render_scene_s": rt.scene_s - before.scene_s,
            "render_draw_s": rt.draw_s - before.draw_s,
            "readback_s": rt.readback_s - before.readback_s,
            "add_frame_s": add_s - (writer.wait_s),
            "encoder_wait_s": writer.wait_s,
            "frames_loop_s": t2 - t_frames,
            "finish_s": t3 - t2,
            "total_s": time.perf_counter() - t0,
        }
        meta = {
            "index": index,
            "demo_file": rel,
            "task": self.task,
            "task_id": demo.task,
            "frames": replay.frames,
            "fps": cfg.fps,
            "control_hz": demo.control_hz,
            "width": cfg.width,
            "height": cfg.height,
            "cameras": list(cfg.cameras),
            "provenance": {
                "source": provenance_source(demo.source),
                "demo_source": demo.source,
                "scene_seed": demo.seed,
                "render_seed": seed,
                "attempt": extra.get("attempt"),
                "random_seed": extra.get("random_seed"),
                "seed_ids": seed_ids(extra.get("sources", [])),
                "sources": extra.get("sources", []),
            },
            "visual_dr": dr if cfg.render.visual_dr else None,
            "gl_renderer": self.renderer.renderer.gl_renderer,
            "times": times,
        }
        write_json(tmp / EPISODE_FILE, meta)
        return UnitResult(index, rel, True, frames=replay.frames, times=times)

    def close(self) -> None:
        self.renderer.close()
