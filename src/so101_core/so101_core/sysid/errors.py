"""Errors of system identification: everything raised on purpose derives from :class:`SysidError`."""

from __future__ import annotations

from so101_core.config.errors import ConfigError


class SysidError(Exception):
    """Base class of the errors of ``so101_core.sysid``."""


class SysidConfigError(SysidError, ConfigError):
    """``sysid.yaml`` is missing a field or holds a bad value (``field`` names it)."""


class RecordingError(SysidError, ValueError):
    """A recording cannot be used for identification; the message names what is missing or wrong."""


class ExcitationError(SysidError, ValueError):
    """No safe excitation fits the limits and the clearance asked for."""
