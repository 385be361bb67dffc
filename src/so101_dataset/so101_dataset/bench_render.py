"""``so101 bench render``: three-camera frames per second rendered **and written to a LeRobot v3.0 dataset**.

P worker processes (spawned; each its own twin, OpenGL context and lerobot writer) replay synthetic
episodes (the arm sweeping, F frames each, per-episode DR) for a fixed time per phase; all workers start a
phase together (barrier) and the rate is frames of *completed* work ÷ wall time of the phase. Phases:

- ``stock``: ``mujoco.Renderer`` one camera at a time (3 renders, 3 readbacks per frame): the ceiling the
  issue measured;
- ``tiled``: :class:`~so101_dataset.render.TiledRenderer`, all cameras (and B frames) per pass, one readback;
- ``dataset``: tiled rendering into one-episode v3.0 shards through lerobot (streaming encode, finalize,
  frame-count check) — ``three_cam_fps_to_dataset`` — plus the merge the export does after it (the first
  dataset phase only: :func:`~so101_dataset.v3_merge.merge_shards` with the phase's process count as
  ``workers``, as ``so101 dataset build`` merges, of at most ``merge_episodes`` of its shards; the cost per
  episode is extrapolated to all of them, plus the one-off import of lerobot's modules, in
  ``three_cam_fps_incl_aggregate``);
- ``export``: the ``dataset`` phase's writing alone: one episode rendered before the phase, written again and
  again as new shards (the export's CPU cost without the renderer's).

Every phase reports the CPU time of its worker processes (all their threads: encoder, libx264, GL driver):
``cpu_s_per_1000_frames``. A dataset or export phase's extras pick the preset and ``video.image_stats``
(``exact`` | ``lerobot``).

Per-phase time shares (summed over workers): scene update, draw submission, readback, lerobot add_frame,
waiting for the encoder (encode-bound), save/finalize/check (write). Cold start (process spawn + imports +
twin + GL context) is reported separately.

The record is handed to ``on_record`` after every phase (and before a merge), marked ``"complete": false``,
so a run cut short by a time limit still leaves its figures; the returned record says ``"complete": true``.
"""

from __future__ import annotations

import copy
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from threading import BrokenBarrierError
from typing import Any

import numpy as np

from .config import IMAGE_STATS, DatasetConfig, load_dataset_config
from .render import READBACKS


def _replay(twin: Any, episode: int, frames: int, fps: int) -> Any:
    from .render import Replay

    rng = np.random.default_rng(episode)
    home = twin.joint_positions()
    s = np.linspace(0.0, 1.0, frames)[:, None]
    target = np.array([*rng.uniform(-0.6, 0.6, 3), rng.uniform(-0.5, 0.5), rng.uniform(-1, 1), 0.0])
    q = home + s * target
    q[:, 5] = 0.9 - 1.0 * s[:, 0]
    objs = {k: np.tile(np.r_[p.position, p.quaternion], (frames, 1)) for k, p in twin.object_poses().items()}
    return Replay(np.arange(frames) / fps, q, q, objs)


def _worker(rank: int, cfg: DatasetConfig, phases: list[dict[str, Any]], barrier: Any, results: Any, work: str) -> None:
    t_spawn = time.time()
    from .render import select_gl

    select_gl(cfg.render.gl)
    from .render import EpisodeRenderer

    fpp = max(p.get("frames_per_pass", 1) for p in phases)  # the buffer fits the largest pass
    setup_error = None
    try:
        er = EpisodeRenderer(
            cfg.width, cfg.height, cfg.cameras, visual_dr=True, shadows=cfg.render.shadows, frames_per_pass=fpp
        )
    except Exception as exc:
        setup_error = f"renderer: {exc!r}"
    try:
        import lerobot.datasets  # noqa: F401  (import cost belongs to the cold start)

        from .lerobot_v3 import quiet_av

        quiet_av()
    except Exception as exc:
        setup_error = (setup_error or "") + f" lerobot: {exc!r}"
    cold = time.time() - t_spawn
    try:
        for ph in phases:
            barrier.wait()
            if rank >= ph["processes"]:
                continue
            try:
                if setup_error and (ph["mode"] in ("dataset", "export") or "renderer" in setup_error):
                    raise RuntimeError(setup_error)
                results.put(_phase(rank, er, ph, cfg, work, cold))
            except Exception as exc:
                results.put({"phase": ph["name"], "rank": rank, "error": repr(exc)[:500], "cold_start_s": cold})
        barrier.wait()
    except BrokenBarrierError:  # the parent stopped (an error or an interruption): so do the workers
        pass
    if setup_error is None or "renderer" not in setup_error:
        er.close()


def _phase(rank: int, er: Any, ph: dict[str, Any], cfg: DatasetConfig, work: str, cold: float) -> dict[str, Any]:
    import mujoco
    from so101_core.lerobot_units import to_lerobot

    from .lerobot_v3 import ShardWriter

    out: dict[str, Any] = {"phase": ph["name"], "rank": rank, "cold_start_s": cold, "frames": 0,
                           "gl_renderer": er.renderer.gl_renderer}  # fmt: skip
    import mujoco as _mj

    er.renderer.frames_per_pass = ph.get("frames_per_pass", 1)
    er.renderer.readback = ph.get("readback", cfg.render.readback)
    er.renderer._scene.flags[_mj.mjtRndFlag.mjRND_SHADOW] = ph.get("shadows", cfg.render.shadows)
    before = replace(er.renderer.times)
    ep_counter = rank * 100000 + abs(hash(ph["name"])) % 10000 * 10
    rendered: list[dict[str, np.ndarray]] = []
    if ph["mode"] == "export":  # the frames it writes, rendered before the clock starts
        er.prepare(ep_counter)
        rep = _replay(er.twin, ep_counter, ph["frames"], cfg.fps)
        rendered = [{c: np.array(v, copy=True) for c, v in imgs.items()} for imgs in er.frames(rep)]
        before = replace(er.renderer.times)
    c0 = time.process_time()
    t0 = time.time()
    deadline = t0 + ph["seconds"]
    add = wait = fin = 0.0
    shards = []
    while time.time() < deadline:
        ep_counter += 1
        if not rendered:
            er.prepare(ep_counter)
            rep = _replay(er.twin, ep_counter, ph["frames"], cfg.fps)
        if ph["mode"] == "stock":
            tw = er.twin
            for j in range(rep.frames):
                tw.data.qpos[tw.index.qpos_adr] = rep.q[j]
                mujoco.mj_kinematics(tw.model, tw.data)
                mujoco.mj_camlight(tw.model, tw.data)
                for c in cfg.cameras:
                    tw.render(c)
                out["frames"] += 1
                if time.time() >= deadline:
                    break
        elif ph["mode"] == "tiled":
            for _ in er.frames(rep):
                out["frames"] += 1
        else:
            st = to_lerobot(rep.q).astype(np.float32)
            root = Path(work) / f"{ph['name']}_{rank}_{ep_counter}"
            w = ShardWriter(root, ph["cfg"])
            for j, imgs in enumerate(rendered or er.frames(rep)):
                a0 = time.perf_counter()
                w.add(imgs, st[j], st[j], "bench")
                add += time.perf_counter() - a0
            f0 = time.perf_counter()
            w.finish()
            fin += time.perf_counter() - f0
            wait += w.wait_s
            out["frames"] += rep.frames
            shards.append(str(root))
            if ph["mode"] == "export":
                shutil.rmtree(root, ignore_errors=True)  # only the time to write it is measured
    t1 = time.time()
    out["cpu_s"] = time.process_time() - c0
    rt = er.renderer.times
    out.update(
        t0=t0,
        t1=t1,
        scene_s=rt.scene_s - before.scene_s,
        draw_s=rt.draw_s - before.draw_s,
        readback_s=rt.readback_s - before.readback_s,
        add_frame_s=add - wait,
        encoder_wait_s=wait,
        write_s=fin,
        shards=shards,
    )
    return out


DEFAULT_PHASES = "stock:1,tiled:1:1,tiled:1:4,dataset:1:4:ultrafast"
MERGE_EPISODES = 48  # shards of the first dataset phase merged, at most


def parse_phases(spec: str, base: DatasetConfig, encoder_threads: int) -> list[dict[str, Any]]:
    """``mode:P[:B[:extra...]]`` comma-separated; extras: an x264 preset, ``noshadow``, a readback (``rgb``,
    ``rgba``, ``bgra``), an image-statistics mode (``exact``, ``lerobot``), ``s=<seconds>``, ``t=<encoder threads>``
    (a dataset or export phase's libx264 threads per camera, 0 = the codec decides; default ``encoder_threads``)."""
    phases: list[dict[str, Any]] = []
    for item in spec.split(","):
        mode, *rest = item.strip().split(":")
        if mode not in ("stock", "tiled", "dataset", "export"):
            raise ValueError(f"phase {item!r}: mode must be stock, tiled, dataset or export")
        p = int(rest[0]) if rest else 1
        b = int(rest[1]) if len(rest) > 1 else 1
        extras = rest[2:]
        ph: dict[str, Any] = {"mode": mode, "processes": p, "frames_per_pass": b if mode != "stock" else 1}
        name = f"{mode}_p{p}" + (f"_b{b}" if mode != "stock" else "")
        preset = base.video.preset
        image_stats = base.video.image_stats
        threads = encoder_threads
        for e in extras:
            if e in IMAGE_STATS:
                image_stats = e
            elif e == "noshadow":
                ph["shadows"] = False
                name += "_noshadow"
            elif e in READBACKS:
                ph["readback"] = e
                name += f"_{e}"
            elif e.startswith("s="):
                ph["seconds"] = float(e[2:])
            elif e.startswith("t="):
                threads = int(e[2:]) if e[2:].isdigit() else -1
                if threads < 0:
                    raise ValueError(
                        f"phase {item!r}: encoder threads must be a whole number >= 0 (0: the codec decides)"
                    )
            else:
                preset = e
        if mode in ("dataset", "export"):
            vc = replace(base.video, preset=preset, encoder_threads=threads, image_stats=image_stats)
            ph["cfg"] = replace(base, video=vc)
            name += f"_{base.video.vcodec}_{preset}_{image_stats}" + (
                f"_t{threads}" if threads != encoder_threads else ""
            )
        if any(q["name"] == name for q in phases):
            raise ValueError(f"phase {item!r} repeats {name!r}: each phase is recorded under its name")
        ph["name"] = name
        phases.append(ph)
    return phases


def run_render_benchmark(
    *,
    width: int = 640,
    height: int = 480,
    phases_spec: str = DEFAULT_PHASES,
    seconds: float = 10.0,
    frames: int = 60,
    cfg: DatasetConfig | None = None,
    encoder_threads: int = 2,
    merge_episodes: int | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the phases (see :func:`parse_phases`); ``three_cam_fps_to_dataset`` = the best dataset phase.

    The first dataset phase's shards are merged as the export merges them, at most ``merge_episodes`` of them
    (0: no merge; None: :data:`MERGE_EPISODES`). ``on_record`` gets a copy of the record so far
    (``"complete": false``) after each phase and before the merge.
    """
    merge_episodes = MERGE_EPISODES if merge_episodes is None else merge_episodes
    base = (cfg or load_dataset_config()).with_overrides(width=width, height=height)
    os.environ.setdefault("MUJOCO_GL", "egl")
    phases = parse_phases(phases_spec, base, encoder_threads)
    processes = tuple(ph["processes"] for ph in phases)
    for ph in phases:
        ph.setdefault("seconds", seconds)
        ph.setdefault("frames", frames)
    nproc = max(processes)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(nproc + 1)
    results = ctx.Queue()
    work = tempfile.mkdtemp(prefix="so101_bench_render_")
    t_start = time.time()
    procs = [ctx.Process(target=_worker, args=(r, base, phases, barrier, results, work)) for r in range(nproc)]
    for pr in procs:
        pr.start()
    record: dict[str, Any] = {"complete": False, "phases": {}}
    cold: list[float] = []

    def summarize() -> None:
        record.update(_summary(record["phases"], cold))
        record.update(
            total_wall_s=round(time.time() - t_start, 1),
            width=width,
            height=height,
            cameras=list(base.cameras),
            frames_per_episode=frames,
            shadows=base.render.shadows,
            mujoco_gl=os.environ.get("MUJOCO_GL", ""),
            merge_episodes=merge_episodes,
            goal_three_cam_fps_to_dataset_gpu=1000.0,
        )

    def checkpoint() -> None:
        if on_record is not None:
            summarize()
            on_record(copy.deepcopy(record))

    aggregated = False  # the merge is timed once (its cost grows with the shard count, not the phase)
    try:
        for ph in phases:
            barrier.wait(timeout=600)
            got = [results.get(timeout=ph["seconds"] + 600) for _ in range(ph["processes"])]
            errors = [r["error"] for r in got if "error" in r]
            rows = [r for r in got if "error" not in r]
            cold += [r["cold_start_s"] for r in got]
            if errors:
                record["phases"][ph["name"]] = {"mode": ph["mode"], "processes": ph["processes"], "errors": errors[:3]}
                checkpoint()
                continue
            wall = max(r["t1"] for r in rows) - min(r["t0"] for r in rows)
            n = sum(r["frames"] for r in rows)
            fps = n / wall if wall > 0 else 0.0
            shares = {
                k: round(sum(r[k] for r in rows), 3)
                for k in ("scene_s", "draw_s", "readback_s", "add_frame_s", "encoder_wait_s", "write_s")
            }
            cpu = sum(r["cpu_s"] for r in rows)
            entry: dict[str, Any] = {
                "shadows": ph.get("shadows", base.render.shadows),
                "readback": ph.get("readback", base.render.readback),
                "mode": ph["mode"],
                "processes": ph["processes"],
                "frames_per_pass": ph.get("frames_per_pass", 1),
                "three_cam_frames": n,
                "wall_s": round(wall, 3),
                "three_cam_fps": round(fps, 1),
                "cpu_s": round(cpu, 3),
                "cpu_s_per_1000_frames": round(cpu / n * 1000, 3) if n else None,
                "worker_time_s": shares,
                "worst_worker_fps": round(min(r["frames"] / max(r["t1"] - r["t0"], 1e-9) for r in rows), 1),
                "gl_renderer": sorted({r.get("gl_renderer", "") for r in rows}),
            }
            record["phases"][ph["name"]] = entry
            shards: list[Path] = []
            if ph["mode"] in ("dataset", "export"):
                v = ph["cfg"].video
                entry["encoder"] = {
                    "vcodec": v.vcodec,
                    "preset": v.preset,
                    "crf": v.crf,
                    "g": v.g,
                    "pix_fmt": v.pix_fmt,
                    "threads": v.encoder_threads,
                }
                entry["image_stats"] = v.image_stats
                shards = [Path(s) for r in rows for s in r["shards"]]  # an export phase's are written and deleted
                entry["episodes"] = len(shards)
            if ph["mode"] == "dataset" and shards and merge_episodes > 0 and not aggregated:
                aggregated = True
                merged = shards[:merge_episodes]
                entry.update(aggregate_episodes=len(merged), aggregate_workers=ph["processes"], aggregate_s=None)
                checkpoint()  # the phase's rate, before the merge
                _aggregate(entry, merged, Path(work) / f"{ph['name']}_merged", ph["cfg"], n, wall)
            for s in shards:
                shutil.rmtree(s, ignore_errors=True)
            checkpoint()
        barrier.wait(timeout=600)
    except BaseException:
        barrier.abort()  # the workers stop waiting for phases that will not come
        raise
    finally:
        for pr in procs:
            pr.join(timeout=60)
            if pr.is_alive():
                pr.kill()
        shutil.rmtree(work, ignore_errors=True)
    summarize()
    record["complete"] = True
    return record


def _aggregate(entry: dict[str, Any], shards: list[Path], out: Path, cfg: DatasetConfig, n: int, wall: float) -> None:
    """Time :func:`~so101_dataset.v3_merge.merge_shards` of ``shards`` with ``entry["aggregate_workers"]``
    threads, after the one-off import of its lerobot modules (``aggregate_import_s``); the merge's cost per
    episode, scaled to all ``entry["episodes"]``, plus that import gives ``three_cam_fps_incl_aggregate``."""
    from .v3_merge import merge_shards, preload

    entry["aggregate_import_s"] = round(preload(), 3)
    a0 = time.time()
    try:
        merge_shards(shards, out, cfg, workers=entry["aggregate_workers"])
        agg = time.time() - a0  # the merge alone, not the removal of its output below
    except Exception as exc:
        entry["aggregate_error"] = repr(exc)[:500]
        return
    finally:
        shutil.rmtree(out, ignore_errors=True)
    per_episode = agg / len(shards)
    total = per_episode * entry["episodes"]
    entry.update(
        aggregate_s=round(agg, 3),
        aggregate_s_per_episode=round(per_episode, 4),
        aggregate_s_all_episodes=round(total, 3),
        three_cam_fps_incl_aggregate=round(n / (wall + entry["aggregate_import_s"] + total), 1),
        three_cam_fps_incl_aggregate_basis=(
            f"merge of all {len(shards)} episodes"
            if len(shards) == entry["episodes"]
            else f"merge of {len(shards)} of {entry['episodes']} episodes, extrapolated linearly to all (its fixed "
            "costs scale too: an upper bound)"
        )
        + ", plus the one-off import of lerobot's merge modules",
    )


def _summary(phases: dict[str, dict[str, Any]], cold: list[float]) -> dict[str, Any]:
    """The headline figures of the phases measured so far (phases with errors have no rate)."""

    def rates(mode: str) -> dict[str, float]:
        return {k: v["three_cam_fps"] for k, v in phases.items() if v["mode"] == mode and "three_cam_fps" in v}

    dataset, stock, tiled = rates("dataset"), rates("stock"), rates("tiled")
    best_name = max(dataset, key=lambda k: dataset[k]) if dataset and max(dataset.values()) > 0 else None
    best = dataset[best_name] if best_name else 0.0
    top_stock = max(stock.values()) if stock else 0.0
    top_tiled = max(tiled.values()) if tiled else None
    return {
        "three_cam_fps_to_dataset": best,
        "best_phase": best_name,
        "stock_ceiling_fps": top_stock if stock else None,
        "tiled_render_fps": top_tiled,
        "ratio_tiled_to_stock": round(top_tiled / top_stock, 2) if top_tiled is not None and top_stock > 0 else None,
        "ratio_dataset_to_stock": round(best / top_stock, 2) if top_stock > 0 else None,
        "cold_start_s": {"mean": round(float(np.mean(cold)), 2), "max": round(float(np.max(cold)), 2)}
        if cold
        else None,
    }


def run_export_benchmark(
    *,
    sizes: list[tuple[int, int]],
    presets: list[str],
    processes: list[int],
    seconds: float = 10.0,
    frames: int = 150,
    encoder_threads: int = 1,
    cfg: DatasetConfig | None = None,
    reference: dict[str, tuple[float, float]] | None = None,
    reference_cores: int = 16,
) -> dict[str, Any]:
    """``so101 bench export``: the v3.0 export alone (``export`` phases), ``image_stats`` lerobot vs exact, per
    size and preset: CPU s per 1,000 three-camera frames and wall frames/s with each process count.

    ``reference`` (``"WxH"`` → (render-only fps, fps into v3.0 with lerobot's stats), measured on a
    ``reference_cores`` machine) gives ``projected_fps``: that machine's core time per frame split into render
    (at most ``cores / render-only fps``) and export (the rest), the export part scaled by the exact/lerobot CPU
    ratio measured here: ``exact_low`` with the render share at its bound, ``exact_high`` with none (the
    reference's rate divided by the ratio).
    """
    record: dict[str, Any] = {"sizes": {}, "processes": processes, "presets": presets, "frames_per_episode": frames}
    record["load_avg_1min_before"] = round(os.getloadavg()[0], 2)  # other work on the machine shares its cores
    for w, h in sizes:
        spec = ",".join(
            f"export:{p}:1:{preset}:{mode}:s={seconds}" for preset in presets for p in processes for mode in IMAGE_STATS
        )
        run = run_render_benchmark(
            width=w, height=h, phases_spec=spec, frames=frames, cfg=cfg, encoder_threads=encoder_threads
        )
        phases = run["phases"]
        key = f"{w}x{h}"
        summary: dict[str, Any] = {}
        for preset in presets:
            row: dict[str, Any] = {}
            for mode in IMAGE_STATS:
                ph = {p: phases.get(f"export_p{p}_b1_{run_vcodec(cfg)}_{preset}_{mode}", {}) for p in processes}
                row[mode] = {
                    "cpu_s_per_1000_frames": ph[min(processes)].get("cpu_s_per_1000_frames"),
                    **{f"fps_p{p}": ph[p].get("three_cam_fps") for p in processes},
                }
            old, new = row["lerobot"]["cpu_s_per_1000_frames"], row["exact"]["cpu_s_per_1000_frames"]
            if old and new:
                ratio = new / old
                row["cpu_ratio_exact_to_lerobot"] = round(ratio, 3)
                if reference and key in reference:
                    render_fps, stock_fps = reference[key]
                    render = reference_cores / render_fps
                    export = max(reference_cores / stock_fps - render, 0.0)
                    row["projected_fps"] = {
                        "cores": reference_cores,
                        "reference_render_only_fps": render_fps,
                        "reference_to_v3_fps_lerobot_stats": stock_fps,
                        "exact_low": round(reference_cores / (render + export * ratio), 1),
                        "exact_high": round(stock_fps / ratio, 1),  # no render CPU: the whole rate scales
                    }
            summary[preset] = row
        record["sizes"][key] = {"summary": summary, "phases": phases, "cold_start_s": run["cold_start_s"]}
    record["load_avg_1min_after"] = round(os.getloadavg()[0], 2)
    return record


def run_vcodec(cfg: DatasetConfig | None) -> str:
    """The codec name the phase names carry."""
    return (cfg or load_dataset_config()).video.vcodec


def gpu_name() -> str | None:
    try:
        import subprocess

        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv: list[str] | None = None) -> int:
    """``python -m so101_dataset.bench_render`` (the GPU machine runs it without the CLI's other deps)."""
    import argparse
    import json

    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--phases", default=DEFAULT_PHASES, help="mode:P[:B[:preset|noshadow|rgb|rgba|bgra|s=SEC]],...")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--encoder-threads", type=int, default=2)
    ap.add_argument("--merge-episodes", type=int, default=MERGE_EPISODES, help="shards merged at most (0: none)")
    ap.add_argument("--no-shadows", action="store_true")
    ap.add_argument("--label", default="cpu")
    ap.add_argument("--out", default="", help="the JSON, also written after each phase (complete: false)")
    a = ap.parse_args(argv)
    cfg = load_dataset_config()
    if a.no_shadows:
        cfg = replace(cfg, render=replace(cfg.render, shadows=False))
    machine = {"gpu": gpu_name()}

    def write(record: dict[str, Any]) -> None:
        if a.out:
            Path(a.out).write_text(json.dumps({**record, "machine": machine}, indent=2) + "\n")

    rec = run_render_benchmark(
        width=a.width, height=a.height, phases_spec=a.phases, seconds=a.seconds, frames=a.frames, cfg=cfg,
        encoder_threads=a.encoder_threads, merge_episodes=a.merge_episodes, on_record=write,
    )  # fmt: skip
    rec["machine"] = machine
    print(json.dumps(rec, indent=2))
    write(rec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
