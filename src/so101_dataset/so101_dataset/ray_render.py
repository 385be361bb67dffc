"""Rendering on Ray: ``workers`` actors (one twin, OpenGL context and encoder each) render demos by index.

``address`` "local" starts a Ray instance here (``num_cpus = workers``); anything else goes to
``ray.init(address=...)`` (``auto``, ``ray://head:10001``). On a cluster the demo and output directories must be
the same path on every node (shared storage) and the nodes need our packages and MUJOCO_GL. An actor that dies
is recreated and its demo rendered again: a unit is written to a temporary directory and renamed when complete,
so a half-written unit never counts and nothing is rendered twice into the output.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .config import DatasetConfig
from .errors import RenderError
from .units import UnitRenderer, UnitResult


class _RenderActor:
    """Ray actor body: one :class:`UnitRenderer`."""

    def __init__(self, cfg: DatasetConfig) -> None:
        self._worker = UnitRenderer(cfg)

    def pid(self) -> int:
        return os.getpid()

    def render(self, index: int, demo: str, root: str, demos_dir: str) -> UnitResult:
        return self._worker.render_unit(index, Path(demo), Path(root), Path(demos_dir))


def render_on_ray(
    todo: Sequence[tuple[int, Path]],
    cfg: DatasetConfig,
    root: Path,
    demos_dir: Path,
    record: Callable[[UnitResult], None],
    *,
    workers: int,
    address: str,
    max_restarts: int = 8,
    on_start: Callable[[list[int]], None] | None = None,
) -> int:
    """Render ``todo`` ((index, demo path) pairs) into ``root``, calling ``record`` per finished unit; returns the
    number of actor restarts. ``on_start`` gets the actors' process ids (tests kill one). Raises RenderError when
    Ray is missing or actors die more than ``max_restarts`` times."""
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is in the venv
        raise RenderError("Ray is not installed (pip install ray); render with local processes instead") from exc
    own = not ray.is_initialized()
    if own:
        local = {"num_cpus": workers, "include_dashboard": False}
        kw: dict[str, Any] = local if address == "local" else {"address": address}
        ray.init(ignore_reinit_error=True, log_to_driver=False, **kw)
    actor_cls = ray.remote(num_cpus=1, max_restarts=0)(_RenderActor)
    cfg_ref = ray.put(cfg)
    actors: list[Any] = [actor_cls.remote(cfg_ref) for _ in range(max(1, min(workers, len(todo))))]
    queue: deque[tuple[int, Path]] = deque(todo)
    idle = list(range(len(actors)))
    inflight: dict[Any, tuple[int, tuple[int, Path]]] = {}
    restarts = 0
    try:
        if on_start is not None:
            on_start([int(p) for p in ray.get([a.pid.remote() for a in actors])])
        while queue or inflight:
            while idle and queue:
                slot, item = idle.pop(), queue.popleft()
                ref = actors[slot].render.remote(item[0], str(item[1]), str(root), str(demos_dir))
                inflight[ref] = (slot, item)
            done, _ = ray.wait(list(inflight), num_returns=1)
            for ref in done:
                slot, item = inflight.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayActorError:
                    restarts += 1
                    if restarts > max_restarts:
                        raise RenderError(f"Ray render workers died {restarts} times") from None
                    actors[slot] = actor_cls.remote(cfg_ref)
                    queue.appendleft(item)
                else:
                    record(result)
                idle.append(slot)
    finally:
        for actor in actors:
            with contextlib.suppress(Exception):  # already gone
                ray.kill(actor)
        if own:
            ray.shutdown()
    return restarts
