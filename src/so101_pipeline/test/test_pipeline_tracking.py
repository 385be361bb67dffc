"""MLflow: one run per pipeline invocation with a nested run per stage, in a local sqlite store."""

from __future__ import annotations

from pathlib import Path

import pipeline_toy_stages as toy
from so101_pipeline.runner import Runner
from so101_pipeline.tracking import MlflowTracker


def test_one_run_per_pipeline_and_a_nested_run_per_stage(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    for _ in range(2):
        with MlflowTracker(tmp_path, experiment="toy") as tracker:
            Runner(tmp_path, toy.stages(), toy.sections(), tracker=tracker).run()
            tracker.log_pipeline({"config": {"a": 1}}, {"wall_s": 1.0}, [tmp_path / "make" / "done.json"])
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("toy")
    assert exp is not None and Path(exp.artifact_location.removeprefix("file://")) == (tmp_path / "mlruns").resolve()
    runs = client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])
    parents = [r for r in runs if r.data.tags.get("so101.kind") == "pipeline"]
    assert len(parents) == 2 and all(r.info.status == "FINISHED" for r in runs)
    assert parents[0].data.params["config.a"] == "1"
    for parent, skipped in zip(parents, ("false", "true"), strict=True):
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        assert sorted(r.info.run_name for r in children) == ["make", "report", "total"]
        assert {r.data.tags["skipped"] for r in children} == {skipped}
        make = next(r for r in children if r.info.run_name == "make")
        assert ("items" in make.data.metrics) == (skipped == "false")
    assert [a.path for a in client.list_artifacts(parents[0].info.run_id)] == ["done.json"]


KILLED_CHILD = """
import sys, time
from pathlib import Path
from so101_pipeline.tracking import MlflowTracker
with MlflowTracker(Path(sys.argv[1]), experiment="toy") as tracker:
    with tracker.stage("train"):
        print("RUNNING", flush=True)
        time.sleep(600)
"""


def test_a_sigkilled_invocation_is_marked_killed_by_the_next(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mlflow import MlflowClient

    proc = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "RUNNING"
    finally:
        proc.kill()
        proc.wait(10)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("toy")
    assert exp is not None
    before = client.search_runs([exp.experiment_id])
    assert len(before) == 2 and {r.info.status for r in before} == {"RUNNING"}  # what SIGKILL leaves
    with MlflowTracker(tmp_path, experiment="toy") as tracker:
        running = client.search_runs([exp.experiment_id], filter_string="attributes.status = 'RUNNING'")
        assert [r.info.run_id for r in running] == [tracker.run_id]  # only this live invocation
    runs = {r.info.run_id: r for r in client.search_runs([exp.experiment_id])}
    assert sorted(r.info.status for r in runs.values()) == ["FINISHED", "KILLED", "KILLED"]
    killed_parent = next(r for r in before if r.data.tags["so101.kind"] == "pipeline").info.run_id
    assert runs[tracker.run_id].data.tags["so101.after_killed"] == killed_parent
