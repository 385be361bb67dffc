"""Exception hierarchy of ``so101_pipeline``: everything raised on purpose derives from :class:`PipelineError`."""

from __future__ import annotations

from so101_core.config import ConfigError


class PipelineError(Exception):
    """Base class of every error raised by ``so101_pipeline``."""


class PipelineConfigError(ConfigError, PipelineError):
    """``pipeline.yaml`` (or a stage library's YAML it names) is unreadable, misses a field or holds a bad value:
    ``file`` is the YAML file, ``field`` the dotted path of the entry (``pipeline.train.steps``)."""


class StageError(PipelineError):
    """A stage failed; ``stage`` names it. Its partial output is kept for the next run to resume."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"stage {stage!r}: {message}")
        self.stage = stage


class StageDependencyError(StageError):
    """A stage's library (``so101_dataset``, ``so101_policy``, ...) is not importable here."""


class SliceEnded(PipelineError):  # noqa: N818 - the end of a time slice, not an error
    """The invocation's time slice (``--slice-s`` / ``SO101_SLICE_S``) ended before ``stage`` could finish: its
    partial output is kept and the next invocation resumes it. Not a failure."""

    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(f"slice ended in stage {stage!r}: {detail}")
        self.stage = stage
