"""Exception hierarchy of ``so101_pipeline``: everything raised on purpose derives from :class:`PipelineError`."""

from __future__ import annotations


class PipelineError(Exception):
    """Base class of every error raised by ``so101_pipeline``."""


class PipelineConfigError(PipelineError, ValueError):
    """``pipeline.yaml`` is unreadable, misses a field or holds a bad value.

    ``file`` is the YAML file, ``field`` the dotted path of the entry (``pipeline.train.steps``).
    """

    def __init__(self, file: str, field: str, message: str) -> None:
        super().__init__(f"{file}: {field}: {message}")
        self.file = file
        self.field = field


class StageError(PipelineError):
    """A stage failed; ``stage`` names it. Its partial output is kept for the next run to resume."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"stage {stage!r}: {message}")
        self.stage = stage


class StageDependencyError(StageError):
    """A stage's library (``so101_dataset``, ``so101_policy``, ...) is not importable here."""
