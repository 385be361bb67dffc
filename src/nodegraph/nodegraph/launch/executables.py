"""Turn a node's ``(package, executable)`` into the command that runs it, without ROS's ``lib/<pkg>/``.

``EntryPointResolver`` finds the package's console script through ``importlib.metadata`` and runs its
function with the current interpreter; ``ScriptResolver`` runs ``<dir>/<executable>.py`` (tests, tools).
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Protocol

from nodegraph.launch.errors import ExecutableNotFoundError


class ExecutableResolver(Protocol):
    def __call__(self, package: str, executable: str) -> list[str]:
        """The command (program and leading arguments) that runs ``executable`` of ``package``."""
        ...


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _console_scripts(package: str) -> list[EntryPoint]:
    wanted = _normalize(package)
    return [
        ep for ep in entry_points(group="console_scripts") if ep.dist is not None and _normalize(ep.dist.name) == wanted
    ]


def python_command(module: str, attribute: str, program: str) -> list[str]:
    """``python -c`` that imports ``module``, calls ``attribute`` (dotted) and exits with its result."""
    head, _, rest = attribute.partition(".")
    call = f"{head}.{rest}()" if rest else f"{head}()"
    code = f"import sys; sys.argv[0] = {program!r}; from {module} import {head}; sys.exit({call})"
    return [sys.executable, "-c", code]


class EntryPointResolver:
    """Resolve console scripts declared by installed distributions (``pip install -e src/<pkg>``)."""

    def __call__(self, package: str, executable: str) -> list[str]:
        scripts = _console_scripts(package)
        for ep in scripts:
            if ep.name == executable:
                return python_command(ep.module, ep.attr, executable)
        if not scripts:
            raise ExecutableNotFoundError(
                f"package {package!r} is not installed or declares no console scripts (pip install -e src/{package})"
            )
        names = ", ".join(sorted(ep.name for ep in scripts))
        raise ExecutableNotFoundError(f"package {package!r} has no executable {executable!r}; it declares: {names}")


class ScriptResolver:
    """Run ``<directory>/<executable>.py`` with the current interpreter, whatever the package."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def __call__(self, package: str, executable: str) -> list[str]:
        script = self.directory / f"{executable}.py"
        if not script.is_file():
            raise ExecutableNotFoundError(f"no script {script} for {package}/{executable}")
        return [sys.executable, str(script)]
