"""``so101 bench render`` leaves its result file after each phase: a run cut off keeps its figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner


class CutOffError(Exception):
    """Stands for the time limit that kills the run."""


def test_render_result_is_written_after_each_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import so101_dataset.bench_render as bench_render
    from so101_cli.bench_cmd import app

    real = bench_render.run_render_benchmark

    def cut_after_first_phase(**kwargs: Any) -> dict[str, Any]:
        write = kwargs["on_record"]

        def then_stop(record: dict[str, Any]) -> None:
            write(record)
            raise CutOffError

        return real(**{**kwargs, "on_record": then_stop})

    monkeypatch.setattr(bench_render, "run_render_benchmark", cut_after_first_phase)
    monkeypatch.setenv("SO101_BENCH_RESULTS", str(tmp_path))
    args = ["render", "--width", "160", "--height", "120", "--frames", "4", "--seconds", "0.5",
            "--phases", "tiled:1:1,tiled:1:2", "--label", "cut"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, CutOffError)
    record = json.loads((tmp_path / "render_cut.json").read_text())
    assert record["complete"] is False and list(record["phases"]) == ["tiled_p1_b1"]
    assert record["benchmark"] == "render_cut" and record["tiled_render_fps"] > 0 and "cores" in record["machine"]
