"""The validation report of an identified twin: an HTML page with the tracking-error table (RMS and max per joint,
nominal vs identified twin, per held-out recording), the fitted parameters (estimate ± σ against the nominal),
and overlaid plots (measured, nominal twin, identified twin); ``summary.png`` is the one-picture version."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.dynamics import PARAMETERS
from so101_core.sysid.fit import ArmFit
from so101_core.sysid.validation import Comparison, pooled_ratio

UNITS = {"kp": "N·m/rad", "kv": "N·m·s/rad", "armature": "kg·m²", "damping": "N·m·s/rad", "frictionloss": "N·m",
         "deadband": "rad", "latency_s": "s"}  # fmt: skip
COLORS = {"measured": "#222222", "nominal": "#d62728", "identified": "#1f77b4"}


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def overlay_plot(c: Comparison, path: Path) -> str:
    """Per joint, positions over time (measured, nominal twin, identified twin; top) and each twin's error
    (twin - measured, mrad; bottom); returns the file name."""
    plt = _pyplot()
    rec, t = c.recording, c.nominal.times
    k0 = rec.times.size - t.size
    fig, axes = plt.subplots(4, 3, figsize=(13, 9), sharex=True)
    for j in range(len(JOINT_NAMES)):
        ax, err = axes[2 * (j // 3), j % 3], axes[2 * (j // 3) + 1, j % 3]
        measured = rec.positions[k0:, j]
        ax.plot(t, measured, color=COLORS["measured"], lw=3.0, alpha=0.35, label="measured")
        ax.plot(t, c.nominal.positions[:, j], "--", color=COLORS["nominal"], lw=0.9, label="nominal twin")
        ax.plot(t, c.identified.positions[:, j], color=COLORS["identified"], lw=0.9, label="identified twin")
        ax.set_title(f"{JOINT_NAMES[j]}", fontsize=9)
        err.plot(t, (c.nominal.positions[:, j] - measured) * 1e3, color=COLORS["nominal"], lw=0.7)
        err.plot(t, (c.identified.positions[:, j] - measured) * 1e3, color=COLORS["identified"], lw=0.7)
        err.set_ylabel("error [mrad]", fontsize=8)
        for a in (ax, err):
            a.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    for ax in axes[::2, 0]:
        ax.set_ylabel("rad")
    fig.suptitle(f"{c.name}: identified / nominal tracking RMS = {c.ratio:.2f}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=75)
    plt.close(fig)
    return path.name


def summary_plot(comparisons: list[Comparison], path: Path) -> str:
    """The report in one small picture: a step response of the most improved joint overlaid (left) and the
    tracking RMS per joint, nominal vs identified, of each held-out recording (right)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [1.1, 1.0]})
    c = comparisons[0]
    gain = c.nominal_error.rms - c.identified_error.rms
    j = int(np.argmax(gain))
    rec, t = c.recording, c.nominal.times
    k0 = rec.times.size - t.size
    err = np.abs(c.nominal.positions[:, j] - rec.positions[k0:, j])
    centre = float(t[int(np.nanargmax(err))])
    window = (t >= centre - 1.0) & (t <= centre + 1.0)
    left.plot(t[window], rec.positions[k0:][window, j], color=COLORS["measured"], lw=4.0, alpha=0.35,
              label="measured (arm)")  # fmt: skip
    left.plot(t[window], c.nominal.positions[window, j], "--", color=COLORS["nominal"], label="nominal twin")
    left.plot(t[window], c.identified.positions[window, j], color=COLORS["identified"], label="identified twin")
    left.set_title(f"{c.name}: {JOINT_NAMES[j]}", fontsize=9)
    left.set_xlabel("time [s]")
    left.set_ylabel("rad")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    x = np.arange(len(JOINT_NAMES))
    width = 0.8 / (2 * len(comparisons))
    for i, comp in enumerate(comparisons):
        off = (2 * i) * width - 0.4 + width / 2
        right.bar(x + off, comp.nominal_error.rms * 1e3, width, color=COLORS["nominal"], alpha=0.5 + 0.4 * (i == 0),
                  label=f"nominal ({comp.name})")  # fmt: skip
        right.bar(x + off + width, comp.identified_error.rms * 1e3, width, color=COLORS["identified"],
                  alpha=0.5 + 0.4 * (i == 0), label=f"identified ({comp.name})")  # fmt: skip
    right.set_xticks(x, [n.replace("_", "\n") for n in JOINT_NAMES], fontsize=7)
    right.set_ylabel("tracking RMS [mrad]")
    right.set_title(f"held-out tracking error, identified / nominal = {pooled_ratio(comparisons):.2f}", fontsize=9)
    right.legend(fontsize=6)
    right.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=70)
    plt.close(fig)
    return path.name


def _f(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}" if np.isfinite(x) else "–"


def write_report(out_dir: Path, comparisons: list[Comparison], fit: ArmFit | None = None, *,
                 title: str = "so101 twin identification", arm_file: str = "",
                 significance: float = 2.0, registers: tuple[int, int] = (32, 32)) -> Path:  # fmt: skip
    """Write ``index.html``, ``summary.png`` and one overlay per recording into ``out_dir``; returns the page."""
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = [overlay_plot(c, out_dir / f"tracking_{c.name}.png") for c in comparisons]
    summary = summary_plot(comparisons, out_dir / "summary.png") if comparisons else ""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1em}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}th{background:#eee}"
        ".good{color:#080}.bad{color:#a00}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if arm_file:
        parts.append(f"<p>Identified twin: <code>{html.escape(arm_file)}</code></p>")
    if comparisons:
        ratio = pooled_ratio(comparisons)
        cls = "good" if ratio <= 0.5 else "bad"
        parts += [
            f"<p>Held-out tracking error, identified / nominal twin (pooled RMS): <b class='{cls}'>{ratio:.3f}</b> "
            "(goal ≤ 0.5). Each twin replays the recorded goals from the recorded start; the error is its joint "
            "position minus the measured one.</p>",
            f"<img src='{summary}' alt='summary'>",
            "<h2>Tracking error per joint [rad]</h2><table><tr><th>recording</th><th>joint</th><th>nominal RMS</th>"
            "<th>identified RMS</th><th>nominal max</th><th>identified max</th><th>RMS ratio</th></tr>",
        ]
        for c in comparisons:
            for j, name in enumerate(JOINT_NAMES):
                nr, ir = c.nominal_error.rms[j], c.identified_error.rms[j]
                r = ir / nr if nr > 0 else float("nan")
                parts.append(
                    f"<tr><td>{html.escape(c.name)}</td><td>{name}</td><td>{_f(nr)}</td><td>{_f(ir)}</td>"
                    f"<td>{_f(c.nominal_error.max[j])}</td><td>{_f(c.identified_error.max[j])}</td><td>{_f(r, 3)}</td>"
                    "</tr>"
                )
        parts.append("</table>")
    if fit is not None:
        parts.append(
            "<h2>Fitted parameters</h2><p>estimate ± 1σ (statistical: residual noise, corrected for its "
            "autocorrelation; model error is not in it) against the nominal twin; <b>bold</b> = differs by more than "
            "the significance threshold, written to the per-arm file.</p><table><tr><th>joint</th>"
            + "".join(f"<th>{p} [{UNITS[p]}]</th>" for p in PARAMETERS)
            + "<th>STS3215 P / D equivalent</th><th>position RMS [rad]</th><th>effort RMS [N·m]</th></tr>"
        )
        for name, jf in fit.joints.items():
            sig = jf.significant(significance)
            cells = []
            for p in PARAMETERS:
                nominal = f"<br><small>nominal {_f(getattr(jf.nominal, p))}</small>"
                text = f"{_f(getattr(jf.estimate, p))} ± {_f(jf.sigma[p], 2)}{nominal}"
                cells.append(f"<td>{'<b>' + text + '</b>' if sig[p] else text}</td>")
            regs = jf.registers(registers)
            cells.append(f"<td>{_f(regs['p_coefficient'], 3)} / {_f(regs['d_coefficient'], 3)}<br><small>nominal "
                         f"{registers[0]} / {registers[1]}</small></td>")  # fmt: skip
            parts.append(
                f"<tr><td>{name}</td>{''.join(cells)}<td>{_f(jf.position_rms)} (nominal {_f(jf.nominal_position_rms)})"
                f"</td><td>{_f(jf.effort_rms)} (nominal {_f(jf.nominal_effort_rms)})</td></tr>"
            )
        parts.append("</table>")
    for c, fig in zip(comparisons, figures, strict=True):
        parts.append(f"<h2>{html.escape(c.name)}</h2><img src='{fig}' alt='{html.escape(c.name)}'>")
    parts.append("</body></html>")
    page = out_dir / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
