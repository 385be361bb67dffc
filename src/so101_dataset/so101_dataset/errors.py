"""Exception hierarchy of so101_dataset: everything raised on purpose derives from :class:`DatasetError`."""

from __future__ import annotations

from so101_core.config.errors import ConfigError


class DatasetError(Exception):
    """Base class of every error raised by ``so101_dataset``."""


class DatasetConfigError(DatasetError, ConfigError):
    """``config/dataset.yaml`` (or a CLI override) holds a bad value (the project's
    :class:`so101_core.config.ConfigError`); ``field`` is the dotted path, e.g. ``dataset.video.crf``."""


class DemoFileError(DatasetError):
    """A kept demo file is missing, corrupt or unusable; ``path`` names it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class RenderError(DatasetError):
    """Rendering failed (no OpenGL backend, a camera the scene lacks, ...)."""


class ExportError(DatasetError):
    """Writing or checking a dataset (v3.0, v2.1, bag, mix) failed."""
