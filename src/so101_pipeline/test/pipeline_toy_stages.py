"""Small real stages for the runner's tests: files written one at a time (atomically), slowly enough to be
killed mid-stage; every stage records how often it ran in ``<root>/runs.log`` (one line per execution).

Run as ``python pipeline_toy_stages.py ROOT COUNT DELAY_S`` to run the toy pipeline in a process (the SIGKILL test)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from so101_core.atomic import write_json
from so101_pipeline.errors import SliceEnded
from so101_pipeline.runner import Runner, Stage, StageContext


def _log(ctx: StageContext) -> None:
    with open(ctx.root / "runs.log", "a", encoding="utf-8") as f:
        f.write(f"{ctx.name} {'resumed' if ctx.resumed else 'fresh'}\n")


def make(ctx: StageContext) -> dict[str, Any]:
    """Writes item_000.json … (resumes after the last complete one)."""
    _log(ctx)
    count, delay = int(ctx.section["count"]), float(ctx.section["delay_s"])
    for i in range(count):
        path = ctx.out_dir / f"item_{i:03d}.json"
        if path.exists():
            continue
        time.sleep(delay)
        write_json(path, {"i": i, "value": i * int(ctx.section["scale"])})
        ctx.progress(i + 1, count, "items")
    return {"items": count, "dir": ctx.name}


def steps(ctx: StageContext) -> dict[str, Any]:
    """Like training: ``count`` steps of ``delay_s``, the step count saved after each; stops cleanly (SliceEnded)
    when the next step would end past the slice's deadline, and resumes from the saved count."""
    _log(ctx)
    count, delay = int(ctx.section["count"]), float(ctx.section["delay_s"])
    state = ctx.out_dir / "state.json"
    done = int(json.loads(state.read_text())["done"]) if state.exists() else 0
    while done < count:
        if ctx.seconds_left() < delay:
            raise SliceEnded(ctx.name, f"{done} of {count} steps saved")
        time.sleep(delay)
        done += 1
        write_json(state, {"done": done})
    return {"steps": done}


def total(ctx: StageContext) -> dict[str, Any]:
    """Sums the upstream items, slowly, into one file (not resumable: it restarts)."""
    _log(ctx)
    items = sorted((ctx.root / str(ctx.inputs["make"].results["dir"])).glob("item_*.json"))
    acc = 0
    for p in items:
        time.sleep(float(ctx.section["delay_s"]))
        acc += int(json.loads(p.read_text())["value"])
    write_json(ctx.out_dir / "total.json", {"total": acc, "n": len(items)})
    return {"total": acc, "n": len(items)}


def report(ctx: StageContext) -> dict[str, Any]:
    _log(ctx)
    t = ctx.inputs["total"].results
    (ctx.out_dir / "report.txt").write_text(f"{t['n']} items, total {t['total']}\n")
    return {"lines": 1}


def spawner(ctx: StageContext) -> dict[str, Any]:
    """Starts a worker process (like a render pool), records its pid, then works until ``hold_s`` passes."""
    import subprocess

    worker = subprocess.Popen(["sleep", "600"])
    write_json(ctx.out_dir / "worker.json", {"pid": worker.pid, "stage_pid": os.getpid()})
    ctx.progress(1, 2, "worker started")
    time.sleep(float(ctx.section["hold_s"]))
    worker.kill()
    worker.wait()
    if ctx.section.get("fail"):
        raise ValueError("asked to fail")
    return {"worker": worker.pid}


def stages() -> list[Stage]:
    return [
        Stage("make", make),
        Stage("total", total, ("make",), resumable=False),
        Stage("report", report, ("total",)),
    ]


def sections(count: int = 6, delay_s: float = 0.0, scale: int = 1, total_delay_s: float = 0.0) -> dict[str, Any]:
    return {
        "make": {"count": count, "delay_s": delay_s, "scale": scale},
        "total": {"delay_s": total_delay_s},
        "report": None,
    }


def runs(root: Path) -> list[str]:
    p = root / "runs.log"
    return p.read_text().split("\n")[:-1] if p.exists() else []


if __name__ == "__main__":
    root, count, delay = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    if count == 0:  # the isolation test: one isolated stage that holds a worker for ``delay`` s
        result = Runner(root, [Stage("spawn", spawner, isolated=True)], {"spawn": {"hold_s": delay}}).run()
    else:
        result = Runner(root, stages(), sections(count, delay, total_delay_s=delay)).run()
    print(json.dumps({s.name: s.skipped for s in result.stages}), flush=True)
    os._exit(0)
