"""``so101 compare A B``: two evaluations paired by scene seed, read from the places the evaluators write."""

from __future__ import annotations

import json
from pathlib import Path

from so101_cli.main import app
from typer.testing import CliRunner


def _write(path: Path, outcomes: dict[int, tuple[bool, bool]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"seed": s, "success": ok, "workshop_success": shop, "steps": 100} for s, (ok, shop) in outcomes.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_a_fast_evaluation_against_a_graph_evaluation_of_four_graphs(tmp_path: Path) -> None:
    """A: ``so101 eval --fast``'s directory; B: a graph evaluation's, its rows in graph_*/episodes.jsonl; six common
    scenes of which A alone solves five: exact McNemar p = 2/32 (the seventh scene is A's alone, left out)."""
    _write(tmp_path / "fast" / "fast_episodes.jsonl", {s: (s < 6, True) for s in range(7)})
    _write(tmp_path / "graph" / "graph_0" / "episodes.jsonl", {0: (False, True), 1: (False, True), 2: (False, True)})
    _write(tmp_path / "graph" / "graph_1" / "episodes.jsonl", {3: (False, True), 4: (False, False), 5: (True, True)})
    result = CliRunner().invoke(app, ["compare", str(tmp_path / "fast"), str(tmp_path / "graph")])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{") :])
    assert out["same_scenes"] == 6
    assert out["success"] == {"a_successes": 6, "b_successes": 1, "only_a": 5, "only_b": 0, "exact_mcnemar_p": 0.0625}
    assert (out["workshop_success"]["only_a"], out["workshop_success"]["only_b"]) == (1, 0)


def _said(result: object, text: str) -> bool:
    """``text`` is in the command's output, whatever the line wrapping (rich wraps at spaces and elsewhere)."""
    return "".join(text.split()) in "".join(result.output.split())  # type: ignore[attr-defined]


def test_evaluations_that_cannot_be_paired_are_named(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "episodes.jsonl", {1: (True, True)})
    _write(tmp_path / "b" / "episodes.jsonl", {2: (True, True)})
    (tmp_path / "empty").mkdir()
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 2 and _said(result, "share no scene seed")
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "empty")])
    assert result.exit_code == 2 and _said(result, "no evaluation episodes")
    (tmp_path / "b" / "episodes.jsonl").write_text('{"seed": 1, "success": true}\nnot json\n')
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b" / "episodes.jsonl")])
    assert result.exit_code == 2 and _said(result, "episodes.jsonl:2: not a JSON row")
