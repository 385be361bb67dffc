"""The one configuration error of the project: every YAML problem names its field (and file, when known)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A YAML config is missing a field or holds a bad value.

    ``field`` is the dotted path of the offending entry (``sim.cameras.ego.fovy``); ``file`` the YAML file it
    came from, when known. Packages derive their own config error from this one, so that a caller can catch
    every configuration problem with one ``except ConfigError``.
    """

    def __init__(self, field: str, message: str, *, file: str | None = None) -> None:
        super().__init__(f"{file}: {field}: {message}" if file else f"{field}: {message}")
        self.field = field
        self.message = message
        self.file = file
