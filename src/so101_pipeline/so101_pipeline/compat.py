"""The few names this package takes from the core library, in one place (old and new layout)."""

from __future__ import annotations

import importlib.util

try:  # before the restructure (checked first: a venv may hold both layouts while it lands)
    from so101_bringup.config_paths import config_dir
    from so101_bringup.sim.errors import ConfigError
    from so101_bringup.sim.fields import Fields, load_yaml
except ImportError:  # pragma: no cover - the one-job-per-package layout
    from so101_core.config_paths import config_dir  # type: ignore[no-redef, unused-ignore]
    from so101_core.sim.errors import ConfigError  # type: ignore[no-redef, assignment, unused-ignore]
    from so101_core.sim.fields import Fields, load_yaml  # type: ignore[no-redef, assignment, unused-ignore]

CLI_MODULE = "so101_bringup.cli.main" if importlib.util.find_spec("so101_bringup.cli") else "so101_cli"
"""The ``so101`` command as ``python -m`` runs it (a process boundary: never imported from here)."""

__all__ = ["CLI_MODULE", "ConfigError", "Fields", "config_dir", "load_yaml"]
