"""Exception hierarchy of SkillGen: everything raised on purpose derives from :class:`SkillGenError`."""

from __future__ import annotations

from so101_core.config.errors import ConfigError


class SkillGenError(Exception):
    """Base class of every error raised by ``so101_skillgen`` (generation side)."""


class SkillGenConfigError(SkillGenError, ConfigError):
    """``config/skillgen.yaml`` (or an argument standing for it) holds a bad value (the project's
    :class:`so101_core.config.ConfigError`); ``field`` is the dotted path, e.g. ``skillgen.ik.backend``."""


class SegmentationError(SkillGenError, ValueError):
    """A seed cannot be split into subtasks (no grasp, grasp without lift, no release, ...)."""


class SelectionError(SkillGenError, ValueError):
    """No usable source seed for a subtask (empty seed set, inconsistent subtask structure)."""


class SeedMismatchError(SkillGenError, ValueError):
    """Seeds record other objects than the task variant's scene (a multi-vial seed needs the multi-vial task)."""


class UnreachableRangeError(SkillGenConfigError):
    """The domain-randomization ranges put an object outside the arm's reach (``field`` names the range)."""


class ResumeError(SkillGenError):
    """An output directory cannot be resumed (written by another config or corrupt progress file)."""
