"""Exception hierarchy of the MuJoCo twin: everything raised on purpose derives from :class:`SimError`."""

from __future__ import annotations

from so101_core.config.errors import ConfigError as BaseConfigError


class SimError(Exception):
    """Base class of every error raised by ``so101_core.sim``."""


class ConfigError(SimError, BaseConfigError):
    """A YAML config (sim, task or DR) is missing a field or holds a bad value (the project's
    :class:`so101_core.config.ConfigError`, within the twin's hierarchy); ``field`` is the dotted path of the
    offending entry, e.g. ``sim.cameras.ego.fovy``."""


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
