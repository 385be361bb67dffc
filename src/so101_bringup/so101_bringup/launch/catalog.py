"""The registry of launches, name → ``LaunchDescriptionData``,
used by ``so101 launch`` and ``launch/*.launch.py``.

To add a launch: write ``descriptions/<name>.py`` defining ``DESCRIPTION``, add it to ``_LAUNCHES`` below, and
add ``launch/<name>.launch.py`` at the repository root calling ``generate_for("<name>")``.
"""

from __future__ import annotations

from types import MappingProxyType

from so101_bringup.launch.description import LaunchDescriptionData
from so101_bringup.launch.descriptions import demo, policy, real, record, sim, skillgen, teleop
from so101_bringup.launch.errors import UnknownLaunchError

_LAUNCHES = MappingProxyType(
    {
        d.name: d
        for d in (
            demo.DESCRIPTION,
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
