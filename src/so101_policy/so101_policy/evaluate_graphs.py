"""Several evaluation graphs side by side: the episodes of one evaluation split into contiguous seed ranges,
each range run by its own graph (router, server, sim node, policy node: :func:`.evaluate.run_episodes`) in its
own process, in ``<out>/graph_<k>/``; the rows are merged in seed order. The first graph records the videos
(it runs the first episodes). Each graph resumes its own range after a crash, as one graph does."""

from __future__ import annotations

import dataclasses
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from .config import EvalConfig
from .errors import PolicyError


def split(episodes: int, graphs: int) -> list[tuple[int, int]]:
    """(first index, count) of each graph's contiguous share of ``episodes``; no empty share."""
    graphs = max(1, min(graphs, episodes))
    base, extra = divmod(episodes, graphs)
    out, first = [], 0
    for k in range(graphs):
        count = base + (1 if k < extra else 0)
        out.append((first, count))
        first += count
    return out


def _graph(spec: Any, out_dir: Path, config: EvalConfig, deadline: float | None) -> list[dict[str, Any]]:
    from .evaluate import run_episodes

    return run_episodes(spec, out_dir, config, deadline=deadline)


def run_graphs(spec: Any, out_dir: Path, config: EvalConfig, *, deadline: float | None = None) -> list[dict[str, Any]]:
    """The rows of ``config.episodes`` episodes run by ``config.graphs`` graphs at once (see the module
    docstring); ``index`` is the episode's place in the whole evaluation, figure paths are relative to
    ``out_dir``. A graph that fails raises PolicyError naming it, after the others have finished."""
    shares = split(config.episodes, config.graphs)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(shares), mp_context=context) as pool:
        futures = []
        for k, (first, count) in enumerate(shares):
            sub = dataclasses.replace(
                config,
                seed=config.seed + first,
                scene_seeds=config.scene_seeds[first : first + count],
                episodes=count,
                videos=config.videos if k == 0 else 0,
                graphs=1,
            )
            futures.append((k, first, pool.submit(_graph, spec, out_dir / f"graph_{k}", sub, deadline)))
        rows, failed = [], []
        for k, first, future in futures:
            try:
                graph_rows = future.result()
            except Exception as exc:  # reported with the graph's name once all are done
                failed.append(f"graph_{k}: {type(exc).__name__}: {exc}")
                continue
            for row in graph_rows:
                row = {**row, "index": first + int(row["index"]), "graph": k}
                for key in ("plot", "video"):
                    if row.get(key):
                        row[key] = f"graph_{k}/{row[key]}"
                rows.append(row)
    if failed:
        raise PolicyError("evaluation graphs failed: " + "; ".join(failed))
    return sorted(rows, key=lambda r: r["index"])
