"""The stage runner: skip when unchanged, re-run what changed and everything downstream, resume after SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pipeline_toy_stages as toy
import pytest
from nodegraph.testing import wait_until
from so101_core.atomic import write_json
from so101_pipeline.errors import PipelineError, StageError
from so101_pipeline.runner import (
    CHANGED,
    DONE,
    INTERRUPTED,
    MARKER,
    NO_OUTPUT,
    UNCHANGED,
    UNFINISHED,
    Runner,
    Stage,
    StageContext,
)

from so101_pipeline import runner as runner_module


def _run(root: Path, **kw: object) -> dict[str, bool]:
    result = Runner(root, toy.stages(), toy.sections(**kw)).run()  # type: ignore[arg-type]
    return {s.name: s.skipped for s in result.stages}


def test_second_run_skips_every_stage(tmp_path: Path) -> None:
    assert _run(tmp_path) == {"make": False, "total": False, "report": False}
    assert _run(tmp_path) == {"make": True, "total": True, "report": True}
    assert toy.runs(tmp_path) == ["make fresh", "total fresh", "report fresh"]
    done = json.loads((tmp_path / "make" / DONE).read_text())
    assert len(done["files"]) == 6 and not (tmp_path / "make" / MARKER).exists()


def test_deleting_an_output_reruns_it_and_downstream_only(tmp_path: Path) -> None:
    _run(tmp_path)
    shutil.rmtree(tmp_path / "total")
    assert _run(tmp_path) == {"make": True, "total": False, "report": False}
    (tmp_path / "make" / "item_003.json").unlink()  # one output file gone: the stage is not intact
    assert _run(tmp_path) == {"make": False, "total": False, "report": False}
    assert json.loads((tmp_path / "total" / "total.json").read_text()) == {"total": 15, "n": 6}


def test_changed_section_reruns_that_stage_and_downstream(tmp_path: Path) -> None:
    _run(tmp_path)
    assert _run(tmp_path, total_delay_s=0.001) == {"make": True, "total": False, "report": False}
    assert _run(tmp_path, total_delay_s=0.001, scale=2) == {"make": False, "total": False, "report": False}
    assert json.loads((tmp_path / "total" / "total.json").read_text())["total"] == 30
    assert len(list((tmp_path / "make").glob("item_*.json"))) == 6  # wiped and rebuilt, not appended to


def test_a_rebuilt_identical_output_still_reruns_downstream(tmp_path: Path) -> None:
    _run(tmp_path)
    shutil.rmtree(tmp_path / "make")  # rebuilt byte for byte: same output hash
    assert _run(tmp_path) == {"make": False, "total": False, "report": False}


def test_stage_error_leaves_no_done_and_resumes(tmp_path: Path) -> None:
    calls: list[bool] = []

    def flaky(ctx: StageContext) -> dict[str, object]:
        calls.append(ctx.resumed)
        (ctx.out_dir / f"part_{len(calls)}.txt").write_text("x")
        if len(calls) == 1:
            raise RuntimeError("boom")
        return {"parts": len(list(ctx.out_dir.glob("part_*")))}

    runner = Runner(tmp_path, [Stage("flaky", flaky)], {"flaky": {"a": 1}})
    with pytest.raises(StageError, match="stage 'flaky': RuntimeError: boom") as info:
        runner.run()
    assert isinstance(info.value.__cause__, RuntimeError)
    assert not (tmp_path / "flaky" / DONE).exists() and (tmp_path / "flaky" / MARKER).exists()
    result = runner.run()
    assert calls == [False, True] and result.stages[0].resumed and result.record("flaky").results == {"parts": 2}
    assert result.stages[0].reason == INTERRUPTED


def test_every_stage_says_why_it_ran_or_was_skipped(tmp_path: Path) -> None:
    def why(**kw: object) -> dict[str, tuple[str, str]]:
        stages = Runner(tmp_path, toy.stages(), toy.sections(**kw)).run().stages  # type: ignore[arg-type]
        return {s.name: ("skipped" if s.skipped else "resumed" if s.resumed else "ran", s.reason) for s in stages}

    assert why() == {"make": ("ran", NO_OUTPUT), "total": ("ran", NO_OUTPUT), "report": ("ran", NO_OUTPUT)}
    assert why() == {name: ("skipped", UNCHANGED) for name in ("make", "total", "report")}
    assert why(total_delay_s=0.001) == {
        "make": ("skipped", UNCHANGED), "total": ("ran", CHANGED), "report": ("ran", "upstream re-ran: total")
    }  # fmt: skip
    (tmp_path / "make" / DONE).unlink()  # as a run of other inputs leaves it when killed
    write_json(tmp_path / "make" / MARKER, {"stage": "make", "fingerprint": "another"})
    assert why(total_delay_s=0.001)["make"] == ("ran", UNFINISHED)


def test_bad_stage_graphs_are_refused(tmp_path: Path) -> None:
    ok = Stage("a", toy.make)
    with pytest.raises(PipelineError, match="'b' needs 'c'"):
        Runner(tmp_path, [ok, Stage("b", toy.total, ("c",))], {})
    with pytest.raises(PipelineError, match="declared twice"):
        Runner(tmp_path, [ok, ok], {})


@pytest.mark.parametrize("stage", ["make", "total"])
def test_sigkill_during_a_stage_then_rerun_gives_the_same_counts(tmp_path: Path, stage: str) -> None:
    script = Path(toy.__file__)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(script.parent), *sys.path])}
    args = [sys.executable, str(script), str(tmp_path), "8", "0.15"]
    child = subprocess.Popen(args, env=env, stdout=subprocess.PIPE)
    if stage == "make":  # mid-stage: some items written, not all
        wait_until(lambda: len(list((tmp_path / "make").glob("item_*.json"))) >= 3, 60, "three items made")
    else:
        wait_until(lambda: (tmp_path / "total" / MARKER).exists(), 60, "the total stage started")
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert not (tmp_path / stage / DONE).exists()
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"make": stage != "make", "total": False, "report": False}
    items = sorted(p.name for p in (tmp_path / "make").glob("*.json") if p.name != DONE)
    assert items == [f"item_{i:03d}.json" for i in range(8)]
    assert not list(tmp_path.rglob("*.part"))
    assert json.loads((tmp_path / "total" / "total.json").read_text()) == {"total": 28, "n": 8}
    second = "make resumed" if stage == "make" else "total fresh"  # total cannot resume: it restarts
    assert toy.runs(tmp_path) == ["make fresh", second, "total fresh", "report fresh"]


def test_captured_output_goes_to_the_stage_log(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    def noisy(ctx: StageContext) -> dict[str, object]:
        os.write(1, b"to stdout\n")  # what print() does outside pytest
        subprocess.run(["sh", "-c", "echo from a child >&2"], check=True)
        return {}

    Runner(tmp_path, [Stage("noisy", noisy)], {"noisy": None}, capture=True).run()
    log = (tmp_path / "logs" / "noisy.log").read_text()
    assert "to stdout" in log and "from a child" in log
    assert "from a child" not in capfd.readouterr().err


def test_volatile_keys_do_not_change_the_fingerprint(tmp_path: Path) -> None:
    stage = Stage("make", toy.make, volatile=("workers",))
    section = {"count": 2, "delay_s": 0.0, "scale": 1}
    Runner(tmp_path, [stage], {"make": {**section, "workers": 1}}).run()
    assert Runner(tmp_path, [stage], {"make": {**section, "workers": 8}}).run().stages[0].skipped
    assert not Runner(tmp_path, [stage], {"make": {**section, "count": 3}}).run().stages[0].skipped


def test_plan_says_what_a_run_would_do_without_running(tmp_path: Path) -> None:
    runner = Runner(tmp_path, toy.stages(), toy.sections())
    assert [why for _, why in runner.plan()] == ["no output yet", "upstream re-runs: make", "upstream re-runs: total"]
    runner.run()
    assert [why for _, why in runner.plan()] == ["skip", "skip", "skip"]
    shutil.rmtree(tmp_path / "total")
    assert runner.plan() == [("make", "skip"), ("total", "no output yet"), ("report", "upstream re-runs: total")]
    assert toy.runs(tmp_path) == ["make fresh", "total fresh", "report fresh"]


def test_an_isolated_stage_reports_progress_results_and_errors(tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str]] = []

    class Reporter:
        def stage_started(self, name: str, reason: str, resumed: bool) -> object:
            return lambda c, t, x: seen.append((c, t, x))

        def stage_finished(self, name: str, skipped: bool, wall_s: float, reason: str) -> None:
            return None

    stage = Stage("spawn", toy.spawner, isolated=True)
    result = Runner(tmp_path, [stage], {"spawn": {"hold_s": 0.1}}, reporter=Reporter()).run()  # type: ignore[arg-type]
    info = json.loads((tmp_path / "spawn" / "worker.json").read_text())
    assert result.record("spawn").results == {"worker": info["pid"]} and info["stage_pid"] != os.getpid()
    assert seen == [(1, 2, "worker started")]
    with pytest.raises(StageError, match="ValueError: asked to fail"):
        Runner(tmp_path, [stage], {"spawn": {"hold_s": 0.0, "fail": True}}).run()
    assert "asked to fail" in (tmp_path / "logs" / "spawn.log").read_text()  # the traceback


def test_sigkill_of_the_pipeline_takes_an_isolated_stage_and_its_workers_down(tmp_path: Path) -> None:
    script = Path(toy.__file__)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(script.parent), *sys.path])}
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path), "0", "300"], env=env)
    info_file = tmp_path / "spawn" / "worker.json"
    wait_until(info_file.exists, 60, "the info file")
    info = json.loads(info_file.read_text())
    os.kill(child.pid, signal.SIGKILL)
    child.wait()

    def gone(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    wait_until(lambda: gone(info["stage_pid"]) and gone(info["pid"]), 30, "the stage and the runner gone")


def test_a_pipeline_in_slices_finishes_as_an_uninterrupted_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of 2.5 s: the isolated stage is stopped at the deadline (SIGTERM) and resumed, the slice-aware one
    stops itself and resumes; no stage starts in a slice's last seconds; the outputs equal an uninterrupted
    run's and each stage's wall time adds up its slices."""
    stages = [
        Stage("make", toy.make, isolated=True),
        Stage("steps", toy.steps, ("make",)),
        Stage("total", toy.total, ("make",), resumable=False),
    ]
    sections = {"make": {"count": 12, "delay_s": 0.25, "scale": 3}, "steps": {"count": 8, "delay_s": 0.3},
                "total": {"delay_s": 0.0}}  # fmt: skip
    whole = Runner(tmp_path / "whole", stages, sections).run()
    assert whole.ended is None
    monkeypatch.setattr(runner_module, "MIN_STAGE_S", 0.2)
    sliced = tmp_path / "sliced"
    ended: list[str | None] = []
    for _ in range(20):
        run = Runner(sliced, stages, sections, deadline=time.time() + 2.5).run()
        ended.append(run.ended)
        if run.ended is None:
            break
    assert ended[-1] is None and {"make", "steps"} <= set(ended), ended
    for name in ("make", "steps", "total"):
        a, b = whole.record(name), run.record(name)
        assert a.output_hash == b.output_hash and a.results == b.results, name
    # every slice's share, not only the last one's (a slice that ended in make spent about 2.5 s in it)
    assert run.record("make").wall_s >= 0.8 * 2.5 * ended.count("make")
    assert toy.runs(sliced)[:2] == ["make fresh", "make resumed"]


def test_no_stage_starts_in_a_slices_last_seconds(tmp_path: Path) -> None:
    run = Runner(tmp_path, toy.stages(), toy.sections(), deadline=time.time() + runner_module.MIN_STAGE_S / 2).run()
    assert run.ended == "make" and run.stages == [] and toy.runs(tmp_path) == []
