"""Writing benchmark results with the machine they ran on."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """Where a figure was measured: host (``$SO101_MACHINE``, e.g. ``device machine``, else the
    host name: lent machines share generic names), CPU model, core count, memory, Python, and the GPUs
    ``nvidia-smi`` lists (``[]`` without one: a lent machine of one kind may be served by another card)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = None
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory_gb = round(pages / 2**30, 1)
    except (ValueError, OSError):
        pass
    return {
        "host": os.environ.get("SO101_MACHINE") or platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": memory_gb,
        "os": platform.platform(),
        "python": platform.python_version(),
        "gpus": _gpu_names(),
    }


def _gpu_names() -> list[str]:
    """The NVIDIA GPUs' names, as ``nvidia-smi`` reports them ([] where there is none)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def results_dir() -> Path:
    """``bench/results`` of the source tree (or ``$SO101_BENCH_RESULTS``)."""
    env = os.environ.get("SO101_BENCH_RESULTS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[4] / "bench" / "results"


def write_result(name: str, result: dict[str, Any]) -> Path:
    """Write ``result`` (with machine and date) to ``bench/results/<name>.json``; returns the path."""
    record = {"benchmark": name, "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **result}
    record["machine"] = {**machine(), **result.get("machine", {})}
    path = results_dir() / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def read_result(name: str) -> dict[str, Any] | None:
    """The recorded ``bench/results/<name>.json``, or None when there is none."""
    path = results_dir() / f"{name}.json"
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data
