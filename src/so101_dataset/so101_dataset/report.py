"""``so101 dataset report DIR``: an HTML page with tables and plots, and the same summary as Markdown.

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
from so101_core.episode_units import EPISODE_FILE, REPLAY_FILE, UNITS_DIR
from so101_core.lerobot_schema import image_key

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
        meta = json.loads((u / EPISODE_FILE).read_text())
        with np.load(u / REPLAY_FILE) as z:
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


STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:75em}table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#eee}"
    "figure{margin:0}figcaption{font-size:13px;color:#555}.muted{color:#777}"
)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|---" * len(header) + "|",
        *("| " + " | ".join(map(str, r)) + " |" for r in rows),
    ]


def _facts(out_dir: Path, units: Sequence[Path], demos_dir: Path | None) -> dict[str, Any]:
    """Everything the report says, once, for both its Markdown and its HTML."""
    rows = _episode_rows(units)
    first = json.loads((units[0] / EPISODE_FILE).read_text())
    per_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        per_source[r["source"]][0] += 1
        per_source[r["source"]][1] += r["frames"]
    render_failures = _read_json(out_dir / UNITS_DIR / "failures.json") or {}
    medians = {
        s: [float(np.nanmedian([r[k] for r in rows if r["source"] == s])) for k, _ in METRICS] for s in per_source
    }
    return {
        "rows": rows,
        "first": first,
        "per_source": dict(sorted(per_source.items())),
        "render_reasons": dict(sorted(Counter(str(v["reason"]) for v in render_failures.values()).items())),
        "generation": _read_json(demos_dir / "summary.json") if demos_dir else None,
        "medians": dict(sorted(medians.items())),
    }


def _markdown(out_dir: Path, f: dict[str, Any]) -> str:
    rows, cameras, gen = f["rows"], f["first"]["cameras"], f["generation"]
    md = ["# Dataset report", "", f"Directory: `{out_dir}`", ""]
    md += _md_table(["source", "episodes", "frames"], [(s, e, n) for s, (e, n) in f["per_source"].items()])
    md += ["", f"Total: {len(rows)} episodes, {sum(r['frames'] for r in rows)} frames, cameras {', '.join(cameras)}."]
    if gen:
        md += [
            "",
            "## Generation (SkillGen)",
            f"Kept {gen.get('kept')} of {gen.get('attempted')} attempts (yield {gen.get('yield')}).",
            "",
        ]
        md += _md_table(["failure reason", "attempts"], sorted((gen.get("failures_by_reason") or {}).items()))
    md += ["", "## Render failures (never in a dataset)", ""]
    md += [f"- {k}: {v}" for k, v in f["render_reasons"].items()] or ["- none"]
    md += ["", "## Trajectory characteristics (median per source)", ""]
    md += _md_table(
        ["source", *(lbl for _, lbl in METRICS)], [(s, *(f"{m:.3g}" for m in meds)) for s, meds in f["medians"].items()]
    )
    return "\n".join(md) + "\n"


def _html(out_dir: Path, f: dict[str, Any]) -> str:
    rows, first, gen = f["rows"], f["first"], f["generation"]
    cameras = first["cameras"]
    head = [
        ("directory", str(out_dir)),
        ("episodes", len(rows)),
        ("frames", sum(r["frames"] for r in rows)),
        ("cameras", ", ".join(cameras)),
        ("image size", f"{first.get('width', '?')}×{first.get('height', '?')} px at {first.get('fps', '?')} fps"),
    ]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>so101 dataset report</title>",
        f"<style>{STYLE}</style></head><body><h1>so101 dataset report</h1><table>",
        *(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in head),
        "</table><h2>Episodes per source</h2>",
        _table(["source", "episodes", "frames"], [(s, e, n) for s, (e, n) in f["per_source"].items()]),
    ]
    if gen:
        kept, tried = gen.get("kept"), gen.get("attempted")
        yld = f"{float(gen['yield']):.0%}" if gen.get("yield") is not None else "?"
        failures = sorted((gen.get("failures_by_reason") or {}).items(), key=lambda kv: -kv[1])
        parts += [f"<h2>Generation (SkillGen)</h2><p>Kept {kept} of {tried} attempts (yield {yld}).</p>"]
        parts += [_table(["failure reason", "attempts"], failures) if failures else "<p>No failed attempts.</p>"]
    reasons = f["render_reasons"]
    parts += ["<h2>Render failures (never in a dataset)</h2>"]
    parts += [_table(["reason", "episodes"], list(reasons.items())) if reasons else "<p>None.</p>"]
    parts += [
        "<h2>Trajectory characteristics per source</h2><p class='muted'>Arm joints only for path, speed and jerk; "
        "gripper close time = first command below the close threshold.</p>",
        _table(
            ["median", *(lbl for _, lbl in METRICS)],
            [(s, *(f"{m:.3g}" for m in meds)) for s, meds in f["medians"].items()],
        ),
        "<img src='trajectories.png' alt='violin plots per source' style='max-width:100%'>",
        f"<h2>Contact sheet (episode {html.escape(str(first.get('index', 0)))})</h2>",
        "<img src='contact_sheet.png' alt='first, middle and last frame per camera' style='max-width:100%'>",
        "<h2>Sample videos (same episode)</h2><div style='display:flex;gap:8px;flex-wrap:wrap'>",
        *(
            f"<figure><video src='sample_{html.escape(c)}.mp4' controls loop muted preload='metadata' width='320'>"
            f"</video><figcaption>{html.escape(c)}</figcaption></figure>"
            for c in cameras
        ),
        "</div><p class='muted'>Also here: <a href='summary.md'>summary.md</a>, "
        "<a href='episodes.json'>episodes.json</a> (per-episode characteristics).</p></body></html>",
    ]
    return "\n".join(parts)


def write_report(out_dir: Path, *, demos_dir: Path | None = None, indices: Sequence[int] | None = None) -> Path:
    """Write ``out_dir/report/{index.html, summary.md, episodes.json, *.png, sample_<cam>.mp4}``; returns the
    directory."""
    units = selected_units(out_dir, indices)
    report = out_dir / "report"
    report.mkdir(parents=True, exist_ok=True)
    facts = _facts(out_dir, units, demos_dir)
    cameras = facts["first"]["cameras"]
    _violins(facts["rows"], report / "trajectories.png")
    _contact_sheet(units[0], cameras, report / "contact_sheet.png")
    for cam in cameras:
        src = sorted((units[0] / "lerobot" / "videos" / image_key(cam)).glob("chunk-*/file-*.mp4"))[0]
        shutil.copyfile(src, report / f"sample_{cam}.mp4")
    (report / "summary.md").write_text(_markdown(out_dir, facts), encoding="utf-8")
    (report / "index.html").write_text(_html(out_dir, facts), encoding="utf-8")
    (report / "episodes.json").write_text(json.dumps(facts["rows"], indent=1))
    return report
