"""Exception hierarchy of the MuJoCo twin: everything raised on purpose derives from :class:`SimError`."""

from __future__ import annotations


class SimError(Exception):
    """Base class of every error raised by ``so101_bringup.sim``."""


class ConfigError(SimError, ValueError):
    """A YAML config (sim, task or DR) is missing a field or holds a bad value.

    ``field`` is the dotted path of the offending entry, e.g. ``sim.cameras.ego.fovy``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class SceneError(SimError):
    """The scene cannot be built (missing asset, joint not found in the MJCF, ...)."""


class UnknownNameError(SimError, KeyError):
    """A camera, object or joint name that the twin does not know."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class PlanningError(SimError):
    """The scripted expert cannot find a kinematic solution for a phase."""


class InvalidCommandError(SimError, ValueError):
    """A joint-target command of the wrong shape or with NaN/inf values."""
