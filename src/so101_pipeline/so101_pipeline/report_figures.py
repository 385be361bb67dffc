"""The pipeline report's figures (matplotlib, Agg, PNG): stage wall times and the training curves."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def stage_times_chart(wall_s: Mapping[str, float], path: Path) -> str:
    """Horizontal bars of each stage's wall time (s, the run that produced its output); returns the file name."""
    plt = _pyplot()
    names = list(wall_s)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 0.9))
    bars = ax.barh(names, [wall_s[n] for n in names], color="#4c78a8")
    ax.bar_label(bars, labels=[f"{wall_s[n]:.1f} s" for n in names], padding=3, fontsize=8)
    ax.invert_yaxis()  # pipeline order, top to bottom
    ax.set_xlabel("wall time [s]")
    ax.margins(x=0.15)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path.name


def read_metrics(path: Path) -> dict[str, list[tuple[int, float]]]:
    """``metrics.jsonl`` (one JSON object per logged step: ``step`` and metric values) as metric → [(step,
    value)] in step order; a step logged twice (a resumed run repeats the steps after its last checkpoint) keeps
    its last value; a line cut by a crash is skipped."""
    by_step: dict[str, dict[int, float]] = {}
    if not path.is_file():
        return {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            step = int(row.pop("step"))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        for key, value in row.items():
            if isinstance(value, int | float) and math.isfinite(value):
                by_step.setdefault(str(key), {})[step] = float(value)
    return {k: sorted(v.items()) for k, v in by_step.items()}


def training_curves(metrics: Mapping[str, list[tuple[int, float]]], path: Path) -> str | None:
    """Loss (total and its parts, log scale when positive) and learning rate over steps; None without a loss."""
    if not metrics.get("loss"):
        return None
    plt = _pyplot()
    fig, (ax_loss, ax_lr) = plt.subplots(1, 2, figsize=(11, 3.4))
    losses = ["loss", *sorted(k for k in metrics if k.startswith("loss/"))]
    for key in losses:
        steps, values = zip(*metrics[key], strict=True)
        ax_loss.plot(steps, values, "-o" if len(steps) < 30 else "-", ms=3, label=key, lw=2 if key == "loss" else 1)
    if all(v > 0 for k in losses for _, v in metrics[k]):
        ax_loss.set_yscale("log")
    ax_loss.set_title("training loss", fontsize=10)
    ax_loss.legend(fontsize=8)
    if metrics.get("lr"):
        steps, values = zip(*metrics["lr"], strict=True)
        ax_lr.plot(steps, values, "-o" if len(steps) < 30 else "-", ms=3, color="#e45756")
        ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    ax_lr.set_title("learning rate", fontsize=10)
    for ax in (ax_loss, ax_lr):
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path.name
