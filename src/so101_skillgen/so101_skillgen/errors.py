"""Exception hierarchy of SkillGen: everything raised on purpose derives from :class:`SkillGenError`."""

from __future__ import annotations


class SkillGenError(Exception):
    """Base class of every error raised by ``so101_skillgen`` (generation side)."""


class SkillGenConfigError(SkillGenError, ValueError):
    """``config/skillgen.yaml`` (or an argument standing for it) holds a bad value.

    ``field`` is the dotted path of the offending entry, e.g. ``skillgen.ik.backend``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class SegmentationError(SkillGenError, ValueError):
    """A seed cannot be split into subtasks (no grasp, grasp without lift, no release, ...)."""


class SelectionError(SkillGenError, ValueError):
    """No usable source seed for a subtask (empty seed set, inconsistent subtask structure)."""


class UnreachableRangeError(SkillGenConfigError):
    """The domain-randomization ranges put an object outside the arm's reach (``field`` names the range)."""


class ResumeError(SkillGenError):
    """An output directory cannot be resumed (written by another config or corrupt progress file)."""
