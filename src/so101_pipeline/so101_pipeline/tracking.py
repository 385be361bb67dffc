"""MLflow tracking: one run per pipeline invocation, a nested run per stage (skipped stages too, tagged
``skipped=true``). Local sqlite store under the output directory by default (``<out>/mlflow.db``, artifacts in
``<out>/mlruns``); any tracking URI (a server) when configured. The stage runs inside its nested run, so a stage
that logs with the fluent API (``mlflow.log_metric``) lands there."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from .fingerprint import canonical

MAX_PARAM = 500


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


class MlflowTrack:
    """The nested run of one stage."""

    def log(self, params: Mapping[str, Any], metrics: Mapping[str, float], tags: Mapping[str, str]) -> None:
        import mlflow

        mlflow.log_params({k: str(v)[:MAX_PARAM] for k, v in params.items()})
        mlflow.log_metrics(dict(metrics))
        mlflow.set_tags(dict(tags))


class MlflowTracker:
    """Context manager around the pipeline's MLflow run."""

    def __init__(self, root: Path, *, uri: str = "", experiment: str = "so101_pipeline", run_name: str = "") -> None:
        self.root = root
        self.uri = uri or default_uri(root)
        self.experiment = experiment
        self.run_name = run_name or "pipeline"
        self.run_id = ""

    def __enter__(self) -> MlflowTracker:
        for name in ("alembic", "mlflow"):
            logging.getLogger(name).setLevel(logging.WARNING)
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        import mlflow

        self.root.mkdir(parents=True, exist_ok=True)
        mlflow.set_tracking_uri(self.uri)
        if mlflow.get_experiment_by_name(self.experiment) is None:
            location = (self.root / "mlruns").resolve().as_uri() if self.uri.startswith("sqlite:") else None
            mlflow.create_experiment(self.experiment, artifact_location=location)
        mlflow.set_experiment(self.experiment)
        run = mlflow.start_run(run_name=self.run_name)
        self.run_id = run.info.run_id
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        import mlflow

        while mlflow.active_run() is not None:
            mlflow.end_run(status="FINISHED" if kind is None else "FAILED")

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[MlflowTrack]:
        import mlflow

        with mlflow.start_run(run_name=name, nested=True):
            yield MlflowTrack()

    def log_pipeline(self, params: Mapping[str, Any], metrics: Mapping[str, float], artifacts: list[Path]) -> None:
        """Params, metrics and artifact files of the pipeline run itself."""
        import mlflow

        flat = flatten(dict(params))
        items = list(flat.items())
        for i in range(0, len(items), 100):
            mlflow.log_params(dict(items[i : i + 100]))
        mlflow.log_metrics(dict(metrics))
        for path in artifacts:
            if path.is_file():
                mlflow.log_artifact(str(path))
