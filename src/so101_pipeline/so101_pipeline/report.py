"""``report/index.html``: the pipeline's one page, readable without a server.

Its figures and videos are files in the same folder (copied or drawn there); the stage folders and the dataset
and evaluation reports are linked relative to it. Sections: the headline (success by our detector with its Wilson
interval, the workshop rule, the profile that produced it); the stages (what each made, its wall time, a bar
chart); SkillGen's yield and failures by reason; the data (contact sheet, one video per camera); training (loss
and learning-rate curves from ``train/metrics.jsonl``); the evaluation's episodes (success by both rules, why each
failed, policy holds) with two rollout videos, the first success and the first failure that have one; where the
MLflow runs are. Built from the stages' ``done.json`` records and the files they name, so it is the same page
whenever the stages are unchanged.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import shutil
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from so101_core.atomic import write_text
from so101_core.lerobot_schema import camera_of, is_image_key
from so101_policy.metrics import wilson_interval

from .report_figures import read_metrics, stage_times_chart, training_curves
from .runner import StageRecord

STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:80em;color:#222}table{border-collapse:collapse;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left;vertical-align:top}"
    "th{background:#eee}.ok{color:#080}.bad{color:#a00}.big{font-size:1.6em;font-weight:600;margin:.3em 0}"
    ".muted{color:#666;font-size:13px}code{background:#f4f4f4;padding:0 .2em}figure{margin:0}"
    "figcaption{font-size:13px;color:#555}.row{display:flex;gap:12px;flex-wrap:wrap;align-items:flex-start}"
)
MLFLOW_UI = "http://127.0.0.1:5000"
"""Where ``mlflow ui`` serves by default: the run links point there."""


@dataclass(frozen=True)
class ReportContext:
    """What the page knows beyond the stage records: the pipeline config file that produced the run
    (``profile``) and the pipeline's MLflow run (all empty when tracking is off)."""

    profile: str = ""
    mlflow_uri: str = ""
    mlflow_experiment_id: str = ""
    mlflow_run_id: str = ""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _link(page: Path, target: Path, text: str) -> str:
    rel = os.path.relpath(target, page.parent)
    return f'<a href="{html.escape(rel)}">{html.escape(text)}</a>'


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table of ``rows`` whose cells are HTML already (escape values with :func:`_e`)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    return (
        f"<table><tr>{head}</tr>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        + "</table>"
    )


def _yes(value: Any) -> str:
    if value is None:
        return "–"
    return "<span class='ok'>yes</span>" if value else "<span class='bad'>no</span>"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _path(root: Path, value: Any) -> Path:
    p = Path(str(value))
    return p if p.is_absolute() else root / p


def _rate(successes: int, n: int) -> str:
    iv = wilson_interval(successes, n)
    return f"{successes}/{n} = {successes / n if n else 0:.0%} (Wilson 95 %: {iv.low:.0%}–{iv.high:.0%})"


# ------------------------------------------------------------------------------------------------ headline


def _image_sizes(v3_dir: Path) -> tuple[str, str]:
    """(cameras with their size, fps) of a LeRobot v3.0 dataset's ``meta/info.json``."""
    info = _read_json(v3_dir / "meta" / "info.json") or {}
    cams = []
    for key, feat in (info.get("features") or {}).items():
        if is_image_key(key):
            dims = dict(zip(feat.get("names") or [], feat.get("shape") or [], strict=False))
            cams.append(f"{camera_of(key)} {dims.get('width', '?')}×{dims.get('height', '?')}")
    return ", ".join(cams) or "no camera", str(info.get("fps", "?"))


def _profile(root: Path, records: Mapping[str, StageRecord], ctx: ReportContext) -> str:
    """One line: the config file and the sizes that matter (demos, cameras, training steps, episodes)."""
    from so101_policy.checkpoints import PRETRAINED, SO101_CONFIG

    facts = []
    if "skillgen" in records:
        seeds = records["seeds"].results.get("seeds", "?") if "seeds" in records else "?"
        facts.append(f"{records['skillgen'].results.get('demos')} demos from {seeds} seeds")
    if "dataset" in records:
        cams, fps = _image_sizes(_path(root, records["dataset"].results.get("v3_dir", "")))
        facts.append(f"{cams} px at {fps} fps")
    if "train" in records:
        r = records["train"].results
        cfg = _read_json(_path(root, r.get("checkpoint_dir", "")) / PRETRAINED / SO101_CONFIG) or {}
        facts.append(f"{_policy_name(cfg.get('policy'))} {r.get('steps')} steps on {cfg.get('device', '?')}")
    if "eval" in records:
        res = _read_json(records["eval"].out_dir / "results.json") or {}
        seconds = (res.get("config") or {}).get("episode_s", "?")
        facts.append(f"{records['eval'].results.get('episodes')} evaluation episodes of ≤ {seconds} s")
    where = f"<code>{_e(ctx.profile)}</code>: " if ctx.profile else ""
    return f"<p>profile {where}{_e(' · '.join(facts))}</p>"


def _headline(page: Path, root: Path, records: Mapping[str, StageRecord], ctx: ReportContext) -> str:
    parts = ["<h1>so101 pipeline</h1>"]
    if "eval" in records:
        r = records["eval"].results
        n, ok = int(r["episodes"]), int(r["successes"])
        lo, hi = float(r["wilson_low"]), float(r["wilson_high"])
        parts.append(
            f"<p class='big'>sim success {float(r['success_rate']):.0%} "
            f"<span class='muted'>({ok}/{n} episodes; Wilson 95 % interval {lo:.0%}–{hi:.0%})</span></p>"
        )
        res = _read_json(records["eval"].out_dir / "results.json") or {}
        if res.get("workshop_successes") is not None:
            parts.append(f"<p>workshop rule: {_e(_rate(int(res['workshop_successes']), n))}</p>")
    else:
        last = next(reversed(list(records)), "nothing") if records else "nothing"
        parts.append(f"<p class='big'>no evaluation in this pipeline (its last stage: {_e(last)})</p>")
    parts.append(_profile(root, records, ctx))
    links = []
    if "dataset" in records and records["dataset"].results.get("report_dir"):
        links.append(
            _link(page, _path(root, records["dataset"].results["report_dir"]) / "index.html", "dataset report")
        )
    if "eval" in records and records["eval"].results.get("report_html"):
        links.append(_link(page, _path(root, records["eval"].results["report_html"]), "evaluation report"))
    if ctx.mlflow_run_id:
        links.append("<a href='#tracking'>MLflow runs</a>")
    if links:
        parts.append(f"<p>{' · '.join(links)}</p>")
    return "".join(parts)


# ------------------------------------------------------------------------------------------------ stages


def _made(name: str, r: Mapping[str, Any]) -> str:
    """What a stage made, in words (its results otherwise)."""
    try:
        if name == "seeds":
            return f"{r['seeds']} seed demos ({r['seeds_successful']} successful; {r['source']})"
        if name == "skillgen":
            return f"{r['demos']} demos kept of {r['attempts']} attempts (yield {float(r['yield']):.0%})"
        if name == "dataset":
            return f"{r['episodes']} episodes, {r['frames']} frames: LeRobot v3.0 and v2.1, bags, report"
        if name == "train":
            return (
                f"{r['steps']} {_policy_name(r.get('policy'))} steps, final loss {float(r['final_loss']):.4g}, "
                f"{float(r['samples_per_s']):.1f} samples/s"
            )
        if name == "eval":
            return f"{r['successes']}/{r['episodes']} episodes succeeded"
    except (KeyError, TypeError, ValueError):
        pass
    shown = {k: v for k, v in r.items() if not str(k).endswith(("dir", "html"))}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "–"


def _stages(page: Path, records: Mapping[str, StageRecord]) -> str:
    rows = [
        [
            _e(name),
            _e(_made(name, rec.results)),
            f"{rec.wall_s:.1f}",
            _e(rec.finished),
            _link(page, rec.out_dir, f"{name}/"),
        ]
        for name, rec in records.items()
    ]
    chart = stage_times_chart({n: r.wall_s for n, r in records.items()}, page.parent / "stage_times.png")
    return (
        "<h2>Stages</h2><p class='muted'>Wall time of the run that produced each output (a skipped stage keeps "
        "its time; this invocation's timings are in <code>summary.json</code> beside this folder).</p>"
        '<div class="row">'
        + _table(["stage", "what it made", "wall [s]", "finished (UTC)", "output"], rows)
        + f"<img src='{chart}' alt='stage wall times' width='560'></div>"
    )


def _skillgen(root: Path, records: Mapping[str, StageRecord]) -> str:
    if "skillgen" not in records:
        return ""
    r = records["skillgen"].results
    kept, tried = int(r["demos"]), int(r["attempts"])
    yield_ci = wilson_interval(kept, tried)
    failures = sorted((r.get("failures_by_reason") or {}).items(), key=lambda kv: -int(kv[1]))
    out = [
        "<h2>SkillGen</h2>",
        f"<p>{kept} demos kept of {tried} attempts: yield {kept / tried if tried else 0:.0%} "
        f"(Wilson 95 %: {yield_ci.low:.0%}–{yield_ci.high:.0%}).</p>",
    ]
    if failures:
        rows = [[_e(k), _e(v), f"{int(v) / tried:.0%}"] for k, v in failures]
        out.append(_table(["failure reason", "attempts", "share of attempts"], rows))
    else:
        out.append("<p>No failed attempts.</p>")
    return "".join(out)


# ------------------------------------------------------------------------------------------------ data, training


def _data(page: Path, root: Path, records: Mapping[str, StageRecord]) -> str:
    if "dataset" not in records or not records["dataset"].results.get("report_dir"):
        return ""
    src = _path(root, records["dataset"].results["report_dir"])
    folder = page.parent
    out = ["<h2>The data</h2>"]
    if (src / "contact_sheet.png").is_file():
        shutil.copyfile(src / "contact_sheet.png", folder / "data_contact_sheet.png")
        out.append("<p class='muted'>First, middle and last frame of each camera (first episode).</p>")
        out.append("<img src='data_contact_sheet.png' alt='contact sheet' style='max-width:100%'>")
    videos = sorted(src.glob("sample_*.mp4"))
    if videos:
        out.append("<div class='row'>")
        for video in videos:
            cam = video.stem.removeprefix("sample_")
            shutil.copyfile(video, folder / f"data_{cam}.mp4")
            out.append(
                f"<figure><video src='data_{_e(cam)}.mp4' controls loop muted preload='metadata' width='320'></video>"
                f"<figcaption>camera {_e(cam)}, first episode</figcaption></figure>"
            )
        out.append("</div>")
    out.append(f"<p>{_link(page, src / 'index.html', 'dataset report')} (sources, trajectory statistics).</p>")
    return "".join(out)


def _training(page: Path, records: Mapping[str, StageRecord]) -> str:
    if "train" not in records:
        return ""
    metrics = read_metrics(records["train"].out_dir / "metrics.jsonl")
    figure = training_curves(metrics, page.parent / "training.png")
    out = ["<h2>Training</h2>"]
    if figure:
        out.append(f"<img src='{figure}' alt='training loss and learning rate' width='880'>")
    else:
        out.append("<p>No training metrics (<code>train/metrics.jsonl</code> is missing or empty).</p>")
    last = {k: v[-1][1] for k, v in metrics.items() if v}
    shown = [k for k in ("loss", "loss/l1_loss", "loss/kld_loss", "grad_norm", "lr", "samples_per_s") if k in last]
    if shown:
        out.append(_table(["at the last logged step", *shown], [["value", *(f"{last[k]:.4g}" for k in shown)]]))
    return "".join(out)


# ------------------------------------------------------------------------------------------------ evaluation


def _episodes(eval_dir: Path) -> list[dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    path = eval_dir / "episodes.jsonl"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                rows[int(row["index"])] = row
            except (ValueError, KeyError, TypeError):
                continue
    return [rows[i] for i in sorted(rows)]


def _holds(row: Mapping[str, Any]) -> str:
    reasons = row.get("hold_reasons") or {}
    text = "; ".join(f"{str(k).removeprefix('holding: ')} ×{v}" for k, v in reasons.items())
    return f"{int(row.get('holds', 0))}" + (f"<div class='muted'>{_e(text)}</div>" if text else "")


def _rollout(page: Path, eval_dir: Path, rows: list[dict[str, Any]], success: bool) -> str:
    row = next((r for r in rows if bool(r["success"]) == success and r.get("video")), None)
    kind = "success" if success else "failure"
    if row is None:
        n = sum(1 for r in rows if bool(r["success"]) == success)
        plural = ("successes" if success else "failures") if n != 1 else kind
        return f"<p class='muted'>No {kind} video: {n} {plural} among the {len(rows)} episodes.</p>"
    name = f"rollout_{kind}.mp4"
    shutil.copyfile(eval_dir / str(row["video"]), page.parent / name)
    why = f": {row['failure']}" if not success and row.get("failure") else ""
    return (
        f"<figure><video src='{name}' controls loop muted preload='metadata' width='420'></video>"
        f"<figcaption>{kind}: episode {_e(row['index'])} (seed {_e(row['seed'])}){_e(why)}</figcaption></figure>"
    )


def _evaluation(page: Path, records: Mapping[str, StageRecord]) -> str:
    if "eval" not in records:
        return ""
    eval_dir = records["eval"].out_dir
    rows = _episodes(eval_dir)
    table = [
        [
            _e(r["index"]),
            _e(r["seed"]),
            _yes(r.get("success")),
            _yes(r.get("workshop_success")),
            _e(r.get("failure") or "–"),
            f"{float(r.get('duration_s', 0.0)):.1f}",
            _holds(r),
            " ".join(_link(page, eval_dir / str(r[k]), k) for k in ("video", "plot") if r.get(k)),
        ]
        for r in rows
    ]
    header = ["#", "seed", "success (our detector)", "success (workshop rule)", "why it failed", "sim s", "holds",
              "figures"]  # fmt: skip
    return (
        "<h2>Evaluation</h2><p class='muted'>Each episode: a randomized scene (seed) in the twin through the graph; "
        "holds: the policy node's hold reports on <code>/diagnostics</code> during the episode, with their "
        "reasons.</p>"
        + _table(header, table)
        + "<div class='row'>"
        + _rollout(page, eval_dir, rows, True)
        + _rollout(page, eval_dir, rows, False)
        + "</div>"
    )


# ------------------------------------------------------------------------------------------------ tracking


def _experiment_of(db: Path, run_id: str) -> str:
    """The experiment id of ``run_id`` in an MLflow sqlite store ("" when unreadable or absent)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            row = con.execute("SELECT experiment_id FROM runs WHERE run_uuid = ?", (run_id,)).fetchone()
    except sqlite3.Error:
        return ""
    return str(row[0]) if row else ""


def _run_row(what: str, uri: str, experiment: str, run_id: str) -> list[str]:
    link = (
        f"<a href='{MLFLOW_UI}/#/experiments/{_e(experiment)}/runs/{_e(run_id)}'>{_e(run_id)}</a>"
        if experiment
        else _e(run_id or "–")
    )
    return [_e(what), f"<code>mlflow ui --backend-store-uri {_e(uri)}</code>", link]


def _tracking(records: Mapping[str, StageRecord], ctx: ReportContext) -> str:
    rows = []
    if ctx.mlflow_run_id:
        rows.append(
            _run_row("pipeline (a nested run per stage)", ctx.mlflow_uri, ctx.mlflow_experiment_id, ctx.mlflow_run_id)
        )
    for name, what in (("train", "training (loss, lr, checkpoints)"), ("eval", "evaluation (success, FRAME metrics)")):
        if name not in records:
            continue
        db = records[name].out_dir / "mlflow.db"
        if not db.is_file():
            continue
        id_file = records[name].out_dir / "mlflow_run_id"
        run_id = id_file.read_text().strip() if id_file.is_file() else ""
        rows.append(_run_row(what, f"sqlite:///{db.resolve()}", _experiment_of(db, run_id) if run_id else "", run_id))
    if not rows:
        return "<h2 id='tracking'>MLflow</h2><p>Tracking was off for this run.</p>"
    return (
        "<h2 id='tracking'>MLflow</h2><p class='muted'>Start the UI on a store, then follow the run's link "
        f"({MLFLOW_UI}).</p>" + _table(["run", "store", "run id"], rows)
    )


def write_report(
    page: Path, root: Path, records: Mapping[str, StageRecord], context: ReportContext | None = None
) -> Path:
    """Write the page (and its figures and copied videos beside it) for the finished stages in ``records``."""
    ctx = context or ReportContext()
    page.parent.mkdir(parents=True, exist_ok=True)
    body = (
        _headline(page, root, records, ctx)
        + _stages(page, records)
        + _skillgen(root, records)
        + _data(page, root, records)
        + _training(page, records)
        + _evaluation(page, records)
        + _tracking(records, ctx)
    )
    text = (
        "<!doctype html><html><head><meta charset='utf-8'><title>so101 pipeline report</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    )
    return write_text(page, text)


def _policy_name(policy: str | None) -> str:
    """The display name of a training config's ``policy`` (a run from before the field trained ACT)."""
    return {"diffusion": "Diffusion Policy"}.get(policy or "act", "ACT")
