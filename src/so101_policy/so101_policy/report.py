"""Evaluation figures and the HTML report: commanded-vs-observed tracking plots, episode videos, tables."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper")


def tracking_plot(t: npt.ArrayLike, q: npt.ArrayLike, cmd: npt.ArrayLike, path: Path) -> str:
    """Per-joint commanded (dashed) vs observed (solid) positions, rad over sim seconds; returns the file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, q, cmd = np.asarray(t), np.asarray(q).reshape(-1, 6), np.asarray(cmd).reshape(-1, 6)
    fig, axes = plt.subplots(2, 3, figsize=(12, 5), sharex=True)
    for j, ax in enumerate(axes.flat):
        ax.plot(t, q[:, j], label="observed")
        ax.plot(t, cmd[:, j], "--", label="commanded")
        ax.set_title(JOINTS[j], fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel("sim time [s]")
    for ax in axes[:, 0]:
        ax.set_ylabel("rad")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path.name


VIDEO_CODECS = ("libx264", "mpeg4")
"""Codecs of the evaluation videos, in order of preference."""


def write_video(frames: list[npt.NDArray[np.uint8]], fps: float, path: Path, max_frames: int = 900) -> str | None:
    """MP4 (H.264 via PyAV's libx264, MPEG-4 part 2 as a fallback) of ``frames`` (H, W, 3) uint8, every browser's
    format; None when there are none.

    Not AV1: PyAV's SVT-AV1 encoder, run as root, switches the calling process's threads to SCHED_FIFO 99 (real-time),
    where its busy threads starve the rest of the machine (the evaluation's own nodes included)."""
    if not frames:
        return None
    import av

    h, w = frames[0].shape[:2]
    h2, w2 = h - h % 2, w - w % 2
    step = max(1, len(frames) // max_frames)
    for codec in VIDEO_CODECS:
        try:
            with av.open(str(path), "w") as container:
                stream: Any = container.add_stream(codec, rate=round(fps))
                stream.width, stream.height, stream.pix_fmt = w2, h2, "yuv420p"
                for img in frames[::step]:
                    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(img[:h2, :w2]), format="rgb24")
                    for packet in stream.encode(frame):
                        container.mux(packet)
                for packet in stream.encode():
                    container.mux(packet)
            return path.name
        except Exception:
            continue
    return None


def _placement(row: dict[str, Any]) -> str:
    """A failed episode's vial placements (``release_placement``, ``final_placement``) as a muted line, else ''."""
    end = row.get("final_placement")
    if row.get("success") or not end:
        return ""

    def where(p: dict[str, Any]) -> str:
        offset = p.get("target_offset_mm")
        target = f", {offset:g} mm from slot {row.get('target_slot')}" if offset is not None else ""
        return f"nearest slot {p['nearest_slot']}{target}, {p['height_mm']:g} mm up, tilted {p['tilt_deg']:g}°"

    let_go = row.get("release_placement")
    text = (f"released {where(let_go)}; " if let_go else "") + f"ended {where(end)}"
    return f"<div class='muted'>{html.escape(text)}</div>"


def _releases_html(releases: dict[str, dict[str, Any]]) -> str:
    """The ``releases`` summary (:func:`.metrics.releases_by_outcome`) as a table; '' without releases."""
    if not releases:
        return ""
    head = (
        "<tr><th>outcome</th><th>episodes</th><th>offset mm p50</th><th>p90</th><th>height mm p50</th><th>p90</th></tr>"
    )
    cells = ("episodes", "offset_mm_p50", "offset_mm_p90", "height_mm_p50", "height_mm_p90")
    body = "".join(
        f"<tr><td>{html.escape(k)}</td>" + "".join(f"<td>{_fmt(v[c])}</td>" for c in cells) + "</tr>"
        for k, v in releases.items()
    )
    return (
        "<h2>Where the vial was let go</h2><p class='muted'>The vial's centre when the jaws last let go of it, lifted: "
        "horizontal distance from the target slot's centre and height above the mat (seated in the rack: about "
        f"64 mm).</p><table>{head}{body}</table>"
    )


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v)) if v is not None else "–"


def write_html(summary: dict[str, Any], rows: list[dict[str, Any]], path: Path) -> Path:
    """A self-contained report page (figures and videos linked relative to it)."""
    s = summary
    lo, hi = s["wilson_95"]
    head = [
        ("policy", s["policy"]),
        ("episodes", s["episodes"]),
        (
            "success (our detector)",
            f"{s['successes']}/{s['episodes']} = {s['success_rate']:.0%} (Wilson 95 %: {lo:.0%} – {hi:.0%})",
        ),
    ]
    if s.get("workshop_rate") is not None:
        wl, wh = s["workshop_wilson_95"]
        head.append(
            (
                "success (workshop rule)",
                f"{s['workshop_successes']}/{s['episodes']} = {s['workshop_rate']:.0%} "
                f"(Wilson 95 %: {wl:.0%} – {wh:.0%})",
            )
        )
    else:
        head.append(("success (workshop rule)", "not available (so101_core.sim.workshop_rule missing)"))
    head += [("cameras", ", ".join(s["cameras"])), ("image size", f"{s['image_size'][0]}×{s['image_size'][1]}")]
    metric_keys = sorted(s["metrics"])
    per_ep_keys = [
        k
        for k in ("path_length", "path_smoothness", "ndtw", "ate", "rte", "action_mse", "gripper_mse")
        if k in metric_keys
    ]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>so101 policy evaluation</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:3px 8px;font-size:13px}th{background:#eee}.ok{color:#080}.bad{color:#a00}"
        ".muted{color:#777;font-size:12px}</style></head><body>",
        "<h1>so101 policy evaluation</h1><table>",
        *[
            f"<tr><th>{_fmt(k)}</th><td>{_fmt(v) if not isinstance(v, str) else html.escape(v)}</td></tr>"
            for k, v in head
        ],
        "</table>",
        _releases_html(s.get("releases") or {}),
        "<h2>FRAME metrics (mean over episodes)</h2>",
        "<p>Joint space, rad. path length / smoothness of the arm joints; DTW, nDTW, ATE, RTE and action MSE against"
        " the scripted expert's rollout on the same seed; joint_mse/gripper_mse = commanded vs observed (a policy "
        "that moves but never grasps leaves a near-zero gripper error).</p><table><tr><th>metric</th><th>mean</th>"
        "</tr>",
        *[f"<tr><td>{html.escape(k)}</td><td>{_fmt(s['metrics'][k])}</td></tr>" for k in metric_keys],
        "</table><h2>Episodes</h2><table><tr><th>#</th><th>seed</th><th>success</th><th>workshop</th>"
        "<th>why it failed</th><th>sim s</th><th>holds</th>"
        + "".join(f"<th>{k}</th>" for k in per_ep_keys)
        + "<th>figures</th></tr>",
    ]
    for r in rows:
        m = r.get("metrics", {})
        links = []
        if r.get("plot"):
            links.append(f"<a href='{r['plot']}'>tracking</a>")
        if r.get("video"):
            links.append(f"<a href='{r['video']}'>video</a>")
        cls = "ok" if r["success"] else "bad"
        parts.append(
            f"<tr><td>{r['index']}</td><td>{r['seed']}</td><td class='{cls}'>{_fmt(r['success'])}</td>"
            f"<td>{_fmt(r.get('workshop_success'))}</td><td>{_fmt(r.get('failure'))}{_placement(r)}</td>"
            f"<td>{_fmt(r['duration_s'])}</td><td>{r.get('holds', 0)}</td>"
            + "".join(f"<td>{_fmt(m.get(k))}</td>" for k in per_ep_keys)
            + f"<td>{' '.join(links)}</td></tr>"
        )
    parts.append("</table>")
    for r in rows:
        if r.get("plot"):
            parts.append(f"<h3>episode {r['index']} (seed {r['seed']})</h3><img src='{r['plot']}' width='900'>")
        if r.get("video"):
            parts.append(f"<br><video src='{r['video']}' controls width='480'></video>")
    if s.get("sim_vs_real"):
        parts.append(sim_vs_real_html(s["sim_vs_real"]))
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def sim_vs_real_html(rows: list[dict[str, Any]]) -> str:
    """The reality-gap table: one row per condition (sim-only, + real demos, co-training, ...)."""
    out = [
        "<h2>Sim vs real</h2><table><tr><th>condition</th><th>sim success</th><th>real success</th>"
        "<th>gap</th><th>real episodes</th><th>real path length</th><th>real gripper MSE</th></tr>"
    ]
    for r in rows:
        gap = (r["sim"] - r["real"]) if r.get("sim") is not None and r.get("real") is not None else None
        out.append(
            f"<tr><td>{html.escape(r['condition'])}</td><td>{_pct(r.get('sim'))}</td><td>{_pct(r.get('real'))}</td>"
            f"<td>{_pct(gap)}</td><td>{r.get('real_episodes', 0)}</td>"
            f"<td>{_fmt(r.get('real_metrics', {}).get('path_length'))}</td>"
            f"<td>{_fmt(r.get('real_metrics', {}).get('gripper_mse'))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"
