"""MLflow tracking: one run per pipeline invocation, a nested run per stage (skipped stages too, tagged
``skipped=true``), through :class:`mlflow.MlflowClient` (no fluent "active run", so a stage library that logs
with the fluent API into its own store, as ``so101_policy.train`` does, cannot collide with it).

A run whose process died (SIGKILL, power loss) stays RUNNING in MLflow; the next invocation on the same store
marks such runs of this host KILLED (runs carry ``so101.host`` and ``so101.pid`` tags) and tags its own run
``so101.after_killed`` with their ids.

Local sqlite store under the output directory by default (``<out>/mlflow.db``, artifacts in ``<out>/mlruns``);
any tracking URI (a server) when configured. View: ``mlflow ui --backend-store-uri sqlite:///<out>/mlflow.db``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from .fingerprint import canonical

MAX_PARAM = 500
BATCH = 100


def default_uri(root: Path) -> str:
    """``sqlite:////abs/<root>/mlflow.db`` (four slashes: an absolute path)."""
    return f"sqlite:///{(root / 'mlflow.db').resolve()}"


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = str(value)[:MAX_PARAM]


def flatten(value: Any) -> dict[str, str]:
    """A nested mapping as ``a.b.c`` → str params (values cut to 500 chars)."""
    out: dict[str, str] = {}
    _flat("", canonical(value), out)
    return out


def _owner_tags() -> dict[str, str]:
    return {"so101.host": socket.gethostname(), "so101.pid": str(os.getpid())}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


class MlflowTrack:
    """The nested run of one stage."""

    def __init__(self, client: Any, run_id: str) -> None:
        self.client = client
        self.run_id = run_id

    def log(self, params: Mapping[str, Any], metrics: Mapping[str, float], tags: Mapping[str, str]) -> None:
        _log_batch(self.client, self.run_id, params, metrics, tags)


def _log_batch(
    client: Any, run_id: str, params: Mapping[str, Any], metrics: Mapping[str, float], tags: Mapping[str, str]
) -> None:
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    p = [Param(k, str(v)[:MAX_PARAM]) for k, v in params.items()]
    m = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
    t = [RunTag(k, str(v)) for k, v in tags.items()]
    for i in range(0, max(len(p), len(m), len(t)), BATCH):
        client.log_batch(run_id, metrics=m[i : i + BATCH], params=p[i : i + BATCH], tags=t[i : i + BATCH])


class MlflowTracker:
    """Context manager around the pipeline's MLflow run (FINISHED, or FAILED when the block raises)."""

    def __init__(self, root: Path, *, uri: str = "", experiment: str = "so101_pipeline", run_name: str = "") -> None:
        self.root = root
        self.uri = uri or default_uri(root)
        self.experiment = experiment
        self.run_name = run_name or "pipeline"
        self.run_id = ""
        self.client: Any = None
        self.experiment_id = ""

    def __enter__(self) -> MlflowTracker:
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        from mlflow import MlflowClient

        for name in ("alembic", "mlflow"):  # after the import: mlflow sets its logger up when imported
            logging.getLogger(name).setLevel(logging.WARNING)

        self.root.mkdir(parents=True, exist_ok=True)
        self.client = MlflowClient(tracking_uri=self.uri)
        exp = self.client.get_experiment_by_name(self.experiment)
        if exp is None:
            location = (self.root / "mlruns").resolve().as_uri() if self.uri.startswith("sqlite:") else None
            self.experiment_id = self.client.create_experiment(self.experiment, artifact_location=location)
        else:
            self.experiment_id = exp.experiment_id
        killed = self._close_orphans()
        tags = {"so101.kind": "pipeline", **_owner_tags()}
        if killed:
            tags["so101.after_killed"] = ",".join(killed)
        run = self.client.create_run(self.experiment_id, run_name=self.run_name, tags=tags)
        self.run_id = run.info.run_id
        return self

    def _close_orphans(self) -> list[str]:
        """Mark KILLED the RUNNING pipeline and stage runs whose process on this host is gone; their ids."""
        host = socket.gethostname()
        runs = self.client.search_runs(
            [self.experiment_id], filter_string="attributes.status = 'RUNNING' and tags.`so101.host` = '" + host + "'"
        )
        killed = []
        for run in runs:
            pid = int(run.data.tags.get("so101.pid", "0") or 0)
            if pid and not _alive(pid):
                self.client.set_terminated(run.info.run_id, "KILLED")
                if run.data.tags.get("so101.kind") == "pipeline":
                    killed.append(run.info.run_id)
        return killed

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.client.set_terminated(self.run_id, "FINISHED" if kind is None else "FAILED")

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[MlflowTrack]:
        tags = {"mlflow.parentRunId": self.run_id, "so101.kind": "stage", **_owner_tags()}
        run = self.client.create_run(self.experiment_id, run_name=name, tags=tags)
        status = "FAILED"
        try:
            yield MlflowTrack(self.client, run.info.run_id)
            status = "FINISHED"
        finally:
            self.client.set_terminated(run.info.run_id, status)

    def log_pipeline(self, params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: list[Path]) -> None:
        """Params, metrics and artifact files of the pipeline run itself."""
        _log_batch(self.client, self.run_id, flatten(dict(params)), metrics, {})
        for path in artifacts:
            if path.is_file():
                self.client.log_artifact(self.run_id, str(path))
