"""``report/index.html``: one small page per pipeline output, linking the dataset and evaluation reports.

Built from the stages' ``done.json`` records only (what each stage produced and how long it took to produce
it), so it is the same page whenever the stages are unchanged."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .atomic import write_text
from .runner import StageRecord

STYLE = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}"
    "table{border-collapse:collapse}td,th{padding:.25em .8em;border-bottom:1px solid #ddd;text-align:left}"
    "th{background:#f4f4f4}.big{font-size:1.6em;font-weight:600}code{background:#f4f4f4;padding:0 .2em}"
)


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval (95 % by default) of ``successes`` out of ``n``; (0, 1) when ``n`` is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _link(page: Path, target: Path, text: str) -> str:
    rel = os.path.relpath(target, page.parent)
    return f'<a href="{html.escape(rel)}">{html.escape(text)}</a>'


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{html.escape(str(k))}: {html.escape(str(v))}" for k, v in value.items()) or "–"
    return html.escape(str(value))


def write_report(page: Path, root: Path, records: Mapping[str, StageRecord]) -> Path:
    """Write the page for the finished stages in ``records``; returns its path."""
    rows: list[str] = []
    links: list[str] = []
    for name, rec in records.items():
        results = ", ".join(
            f"{html.escape(k)}={_cell(v)}" for k, v in rec.results.items() if not str(k).endswith(("_dir", "_html"))
        )
        rows.append(
            f"<tr><td>{html.escape(name)}</td><td>{rec.wall_s:.1f}</td><td>{results}</td>"
            f"<td>{_link(page, rec.out_dir, name + '/')}</td></tr>"
        )
        for key, value in rec.results.items():
            if str(key).endswith(("_dir", "_html", "dir")):
                target = Path(str(value)) if Path(str(value)).is_absolute() else root / str(value)
                index = target / "index.html" if target.is_dir() and (target / "index.html").is_file() else target
                links.append(f"<li>{html.escape(name)} {html.escape(str(key))}: {_link(page, index, str(value))}</li>")
    main_links = []
    if "dataset" in records and records["dataset"].results.get("report_dir"):
        target = root / str(records["dataset"].results["report_dir"]) / "index.html"
        main_links.append(_link(page, target, "dataset report"))
    if "eval" in records:
        main_links.append(_link(page, root / str(records["eval"].results["report_html"]), "evaluation report"))
    headline = "<p>no evaluation in this pipeline</p>"
    if "eval" in records:
        r = records["eval"].results
        lo, hi = float(r["wilson_low"]), float(r["wilson_high"])
        headline = (
            f'<p class="big">sim success {float(r["success_rate"]):.0%} '
            f"({int(r['successes'])}/{int(r['episodes'])} episodes; 95 % Wilson interval {lo:.0%}–{hi:.0%})</p>"
        )
    if "skillgen" in records:
        g = records["skillgen"].results
        kept = f"{g['demos']} demos kept of {g['attempts']} attempts"
        headline += f"<p>SkillGen: {kept} (yield {float(g['yield']):.0%})</p>"
    text = (
        "<!doctype html><html><head><meta charset='utf-8'><title>so101 pipeline report</title>"
        f"<style>{STYLE}</style></head><body><h1>so101 pipeline</h1>{headline}"
        + (f"<p>{' · '.join(main_links)}</p>" if main_links else "")
        + ""
        "<h2>Stages</h2><table><tr><th>stage</th><th>wall [s] (when produced)</th><th>results</th><th>output</th></tr>"
        + "".join(rows)
        + "</table><h2>Reports and outputs</h2><ul>"
        + "".join(links)
        + "</ul><p>Per-invocation timings (which stages were skipped): <code>summary.json</code> beside this folder."
        "</p></body></html>\n"
    )
    return write_text(page, text)
