"""The render stage: kept demos → one complete unit per episode under ``<out>/episodes/``, resumable.

A unit's files (replay.npz, frames.npz with ``render.keep_frames``, episode.json, lerobot/) are laid out as
:mod:`so101_core.episode_units` says.

A unit is built under ``.tmp/`` and renamed into place only when complete, so after a SIGKILL a rerun finds
complete units (skipped) and partial ones (deleted, redone): exactly the requested episodes, no duplicates,
no torn files. Demos that fail (unreadable file, unsuccessful demo, render or encode error) never become a
unit; ``failures.json`` lists them with their reason (``on_bad_demo: stop`` raises instead, naming the file).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from so101_core.atomic import write_json
from so101_core.episode_units import EPISODE_FILE, UNIT_GLOB, UNITS_DIR
from so101_core.seeds.format import FAILED_DIR

from .config import DatasetConfig
from .errors import DatasetError, DemoFileError
from .units import UnitRenderer, UnitResult


def find_demos(demos_dir: Path) -> list[Path]:
    """Kept demo files (``*.npz``, sorted; temporaries and ``failed/`` attempts excluded).

    Raises naming the directory when there are none."""
    if not demos_dir.is_dir():
        raise DemoFileError(str(demos_dir), "no such demo directory")
    files = sorted(
        p
        for p in demos_dir.glob("**/*.npz")
        if ".tmp" not in p.name and FAILED_DIR not in p.relative_to(demos_dir).parts[:-1]
    )
    if not files:
        raise DemoFileError(str(demos_dir), "no demo files (*.npz)")
    return files


# ---------------------------------------------------------------------------------------------- the stage
Progress = Callable[[str, int, int], None]
_WORKER: UnitRenderer | None = None


def _init_worker(cfg: DatasetConfig) -> None:
    global _WORKER
    _WORKER = UnitRenderer(cfg)


def _work(index: int, demo: str, root: str, demos_dir: str) -> UnitResult:
    assert _WORKER is not None
    return _WORKER.render_unit(index, Path(demo), Path(root), Path(demos_dir))


def render_fingerprint(cfg: DatasetConfig) -> dict[str, Any]:
    """What every unit of one output directory must share (a rerun with other values would mix them)."""
    return {
        "fps": cfg.fps,
        "width": cfg.width,
        "height": cfg.height,
        "cameras": list(cfg.cameras),
        "robot_type": cfg.robot_type,
        "task": cfg.task,
        "render": asdict(cfg.render),
        "video": {k: v for k, v in asdict(cfg.video).items() if k not in ("encoder_threads", "queue_frames")},
    }


def check_fingerprint(root: Path, cfg: DatasetConfig) -> None:
    """Record the render settings of ``root`` on first use; raise if a rerun asks for other ones."""
    path = root / "render_config.json"
    want = render_fingerprint(cfg)
    if path.is_file():
        have = json.loads(path.read_text(encoding="utf-8"))
        if have != want:
            diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
            raise DatasetError(
                f"{root} was rendered with other settings ({', '.join(diff)}: {[have.get(k) for k in diff]}, "
                f"now {[want.get(k) for k in diff]}); use a new output directory"
            )
    else:
        write_json(path, want)


def complete_units(root: Path) -> dict[int, Path]:
    """Index → directory of every complete unit under ``root`` (``episodes/``)."""
    out = {}
    for d in sorted(root.glob(UNIT_GLOB)) if root.is_dir() else []:
        if d.is_dir() and (d / EPISODE_FILE).is_file():
            out[int(d.name.split("_")[1])] = d
    return out


def render_episodes(
    demos_dir: Path,
    out_dir: Path,
    cfg: DatasetConfig,
    *,
    workers: int | None = None,
    max_episodes: int | None = None,
    progress: Progress | None = None,
    address: str = "",
) -> dict[str, Any]:
    """Render every kept demo (or the first ``max_episodes``) not yet rendered; returns a summary. ``workers``
    processes here, or Ray actors when ``address`` is given ("local" or a cluster: :mod:`.ray_render`)."""
    demos = find_demos(demos_dir)
    if max_episodes is not None:
        demos = demos[:max_episodes]
    root = out_dir / UNITS_DIR
    root.mkdir(parents=True, exist_ok=True)
    check_fingerprint(root, cfg)
    shutil.rmtree(root / ".tmp", ignore_errors=True)
    done = complete_units(root)
    failures_path = root / "failures.json"
    failures: dict[str, Any] = json.loads(failures_path.read_text()) if failures_path.is_file() else {}
    todo = [(i, p) for i, p in enumerate(demos) if i not in done]
    total = len(demos)
    finished = len(demos) - len(todo)
    if progress:
        progress("render", finished, total)
    n = max(1, min(workers or cfg.workers, len(todo) or 1))

    ok_this_run = 0

    def record(res: UnitResult) -> None:
        nonlocal finished, ok_this_run
        finished += 1
        ok_this_run += int(res.ok)
        if res.ok:
            failures.pop(str(res.index), None)
        else:
            failures[str(res.index)] = {"demo": res.demo, "reason": res.reason, "detail": res.detail}
        write_json(failures_path, failures)
        if not res.ok and cfg.on_bad_demo == "stop":
            raise DemoFileError(str(demos_dir / res.demo), f"{res.reason}: {res.detail}")
        if progress:
            progress("render", finished, total)

    t0 = time.perf_counter()
    if address and todo:
        from .ray_render import render_on_ray

        render_on_ray(todo, cfg, root, demos_dir, record, workers=n, address=address)
    elif n == 1:
        if todo:
            worker = UnitRenderer(cfg)
            try:
                for i, p in todo:
                    record(worker.render_unit(i, p, root, demos_dir))
            finally:
                worker.close()
    else:
        with ProcessPoolExecutor(n, mp_context=get_context("spawn"), initializer=_init_worker, initargs=(cfg,)) as pool:
            futs = [pool.submit(_work, i, str(p), str(root), str(demos_dir)) for i, p in todo]
            try:
                for fut in as_completed(futs):
                    record(fut.result())
            except BaseException:
                for f in futs:
                    f.cancel()
                raise
    units = complete_units(root)
    wanted = set(range(len(demos)))
    return {
        "requested": len(demos),
        "rendered": len(set(units) & wanted),
        "failed": {k: v for k, v in failures.items() if int(k) in wanted},
        "rendered_this_run": ok_this_run,
        "wall_s": time.perf_counter() - t0,
        "units": [units[i] for i in sorted(set(units) & wanted)],
    }


def load_unit(unit: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((unit / EPISODE_FILE).read_text(encoding="utf-8"))
    return meta


def selected_units(out_dir: Path, indices: Sequence[int] | None = None) -> list[Path]:
    """Complete units under ``out_dir/episodes`` in index order (optionally only ``indices``)."""
    units = complete_units(out_dir / UNITS_DIR)
    if not units:
        raise DatasetError(f"{out_dir / 'episodes'}: no rendered episodes (run `so101 dataset render` first)")
    keys = sorted(units) if indices is None else [i for i in sorted(units) if i in set(indices)]
    return [units[i] for i in keys]
