"""``so101 dataset report DIR``: an HTML page with plots and a Markdown summary of a built dataset.

Contents: episodes and frames per source (seed / generated / real); generation yield and failures by reason
(the demo directory's ``summary.json`` / ``failures.json``) plus render failures; violin plots per source of
episode length (s), arm joint-space path length (rad), peak arm joint speed (rad/s), RMS arm jerk (rad/s³) and
gripper close time (s, first command below the close threshold); a contact sheet of the first / middle / last
frame of every camera of the first episode; one sample video per camera (that episode's MP4).
"""

from __future__ import annotations

import html
import json
import shutil
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .episodes import selected_units

GRIPPER_CLOSED_BELOW = 0.3  # rad, as skillgen.yaml's segmentation threshold
METRICS = (
    ("length_s", "episode length (s)"),
    ("path_rad", "arm path length (rad)"),
    ("peak_speed", "peak arm joint speed (rad/s)"),
    ("rms_jerk", "RMS arm jerk (rad/s³)"),
    ("grip_close_s", "gripper close time (s)"),
)


def trajectory_metrics(t: np.ndarray, q: np.ndarray, action: np.ndarray) -> dict[str, float]:
    """Characteristics of one episode: t (F,) s, q (F, 6) rad measured, action (F, 6) rad commanded."""
    arm = q[:, :5]
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0
    v = np.diff(arm, axis=0) / dt if len(t) > 1 else np.zeros((1, 5))
    jerk = np.diff(arm, n=3, axis=0) / dt**3 if len(t) > 3 else np.zeros((1, 5))
    closed = np.nonzero(action[:, 5] < GRIPPER_CLOSED_BELOW)[0]
    return {
        "length_s": float(t[-1] - t[0] + dt),
        "path_rad": float(np.abs(np.diff(arm, axis=0)).sum()),
        "peak_speed": float(np.abs(v).max()),
        "rms_jerk": float(np.sqrt((jerk**2).mean())),
        "grip_close_s": float(t[closed[0]]) if len(closed) else float("nan"),
    }


def _episode_rows(units: Sequence[Path]) -> list[dict[str, Any]]:
    rows = []
    for u in units:
        meta = json.loads((u / "episode.json").read_text())
        with np.load(u / "replay.npz") as z:
            m = trajectory_metrics(z["t"], z["q"], z["action"])
        rows.append({"unit": u.name, "source": meta["provenance"]["source"], "frames": meta["frames"], **m})
    return rows


def _violins(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sources = sorted({r["source"] for r in rows})
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.6))
    for ax, (key, label) in zip(axes, METRICS, strict=True):
        data, names = [], []
        for s in sources:
            vals = np.array([r[key] for r in rows if r["source"] == s], dtype=float)
            vals = vals[np.isfinite(vals)]
            if len(vals):
                data.append(vals)
                names.append(f"{s} ({len(vals)})")
        if data:
            if all(len(d) > 1 for d in data):
                ax.violinplot(data, showmedians=True)
            else:
                ax.boxplot(data)
            ax.set_xticks(range(1, len(names) + 1), names)
        ax.set_title(label, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _contact_sheet(unit: Path, cameras: Sequence[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .bags import decode_frames
    from .lerobot_v3 import image_key

    fig, axes = plt.subplots(len(cameras), 3, figsize=(9, 2.4 * len(cameras)), squeeze=False)
    for r, cam in enumerate(cameras):
        video = sorted((unit / "lerobot" / "videos" / image_key(cam)).glob("chunk-*/file-*.mp4"))[0]
        frames = list(decode_frames(video))
        for c, (name, i) in enumerate((("first", 0), ("middle", len(frames) // 2), ("last", len(frames) - 1))):
            ax = axes[r][c]
            ax.imshow(frames[i])
            ax.set_axis_off()
            ax.set_title(f"{cam} {name} (frame {i})", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_report(out_dir: Path, *, demos_dir: Path | None = None, indices: Sequence[int] | None = None) -> Path:
    """Write ``out_dir/report/{index.html, summary.md, *.png, sample_<cam>.mp4}``; returns the directory."""
    units = selected_units(out_dir, indices)
    report = out_dir / "report"
    report.mkdir(parents=True, exist_ok=True)
    rows = _episode_rows(units)
    first = json.loads((units[0] / "episode.json").read_text())
    cameras = first["cameras"]
    per_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        per_source[r["source"]][0] += 1
        per_source[r["source"]][1] += r["frames"]
    render_failures = _read_json(out_dir / "episodes" / "failures.json") or {}
    render_reasons = Counter(str(v["reason"]) for v in render_failures.values())
    gen = _read_json(demos_dir / "summary.json") if demos_dir else None
    _violins(rows, report / "trajectories.png")
    _contact_sheet(units[0], cameras, report / "contact_sheet.png")
    from .lerobot_v3 import image_key

    for cam in cameras:
        src = sorted((units[0] / "lerobot" / "videos" / image_key(cam)).glob("chunk-*/file-*.mp4"))[0]
        shutil.copyfile(src, report / f"sample_{cam}.mp4")
    md = ["# Dataset report", "", f"Directory: `{out_dir}`", "", "| source | episodes | frames |", "|---|---|---|"]
    md += [f"| {s} | {e} | {f} |" for s, (e, f) in sorted(per_source.items())]
    md += ["", f"Total: {len(rows)} episodes, {sum(r['frames'] for r in rows)} frames, cameras {', '.join(cameras)}."]
    if gen:
        md += [
            "",
            "## Generation (SkillGen)",
            f"Kept {gen.get('kept')} of {gen.get('attempted')} attempts (yield {gen.get('yield')}).",
            "",
            "| failure reason | attempts |",
            "|---|---|",
        ]
        md += [f"| {k} | {v} |" for k, v in sorted((gen.get("failures_by_reason") or {}).items())]
    md += ["", "## Render failures (never in a dataset)", ""]
    md += [f"- {k}: {v}" for k, v in sorted(render_reasons.items())] or ["- none"]
    md += ["", "## Trajectory characteristics (median per source)", ""]
    md += ["| source | " + " | ".join(lbl for _, lbl in METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
    for s in sorted(per_source):
        meds = [np.nanmedian([r[k] for r in rows if r["source"] == s]) for k, _ in METRICS]
        md.append(f"| {s} | " + " | ".join(f"{m:.3g}" for m in meds) + " |")
    (report / "summary.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    videos = "".join(
        f'<figure><video src="sample_{c}.mp4" controls loop muted width="320"></video>'
        f"<figcaption>{c}</figcaption></figure>"
        for c in cameras
    )
    body = html.escape("\n".join(md))
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>so101 dataset report</title></head><body>"
        f"<h1>so101 dataset report</h1><pre>{body}</pre>"
        "<h2>Trajectory characteristics per source</h2><img src='trajectories.png' style='max-width:100%'>"
        "<h2>Contact sheet (first episode)</h2><img src='contact_sheet.png' style='max-width:100%'>"
        f"<h2>Sample videos (first episode)</h2><div style='display:flex;gap:8px'>{videos}</div></body></html>"
    )
    (report / "index.html").write_text(page, encoding="utf-8")
    (report / "episodes.json").write_text(json.dumps(rows, indent=1))
    return report
