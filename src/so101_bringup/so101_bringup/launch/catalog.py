"""The registry of launches, name → ``LaunchDescriptionData``, used by ``so101 launch`` and ``launch/*.launch.py``
(the engine, ``nodegraph.launch``, gets the descriptions and the ``config/`` directory from here).

To add a launch: write ``descriptions/<name>.py`` defining ``DESCRIPTION``, add it to ``_LAUNCHES`` below, and
add ``launch/<name>.launch.py`` at the repository root calling ``generate_for("<name>")``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from nodegraph.launch import runner
from nodegraph.launch.description import LaunchDescriptionData
from nodegraph.launch.errors import UnknownLaunchError
from nodegraph.launch.ros_launch import to_launch_description

from so101_bringup.launch.descriptions import demo, evaluation, policy, real, record, sim, skillgen, teleop
from so101_bringup.launch.paths import config_dir

_LAUNCHES = MappingProxyType(
    {
        d.name: d
        for d in (
            demo.DESCRIPTION,
            evaluation.DESCRIPTION,
            policy.DESCRIPTION,
            real.DESCRIPTION,
            record.DESCRIPTION,
            sim.DESCRIPTION,
            skillgen.DESCRIPTION,
            teleop.DESCRIPTION,
        )
    }
)


def launch_names() -> list[str]:
    """Registered launch names, sorted."""
    return sorted(_LAUNCHES)


def get_launch(name: str) -> LaunchDescriptionData:
    """The description registered as ``name``; ``UnknownLaunchError`` lists the valid names otherwise."""
    try:
        return _LAUNCHES[name.removesuffix(".launch.py")]
    except KeyError:
        raise UnknownLaunchError(f"no launch named {name!r}; available: {', '.join(launch_names())}") from None


def run_launch(name: str, args: Sequence[str] = (), options: runner.RunnerOptions | None = None) -> int:
    """What ``so101 launch NAME [arg:=value ...]`` does: the engine's runner on this catalog and ``config/``."""
    options = options or runner.RunnerOptions()
    if options.config_dir is None:
        options = replace(options, config_dir=config_dir)
    return runner.run_launch(get_launch, name, args, options)


def generate_for(name: str) -> Any:
    """``generate_launch_description()`` body of ``launch/<name>.launch.py``."""
    return to_launch_description(get_launch(name), config_dir=config_dir)
