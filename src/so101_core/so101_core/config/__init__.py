"""One config system: :class:`ConfigError` naming file and field, the :class:`Fields` validator, and the
config-directory lookup (:func:`config_dir`, with the ament-index fallback). Defaults live only in the
dataclasses that the loaders fill."""

from so101_core.config.errors import ConfigError
from so101_core.config.fields import Fields, check_float, load_yaml
from so101_core.config_paths import ConfigDirNotFoundError, config_dir

__all__ = ["ConfigDirNotFoundError", "ConfigError", "Fields", "check_float", "config_dir", "load_yaml"]
