"""Quality-of-service profiles, with the values rmw uses for its enums."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Reliability = Literal["reliable", "best_effort"]
Durability = Literal["volatile", "transient_local"]
History = Literal["keep_last", "keep_all"]


@dataclass(frozen=True)
class QoS:
    """A QoS profile: history depth, reliability, durability and lifespan (ns, 0 = infinite); deadline and
    liveliness stay at their defaults."""

    depth: int = 10
    reliability: Reliability = "reliable"
    durability: Durability = "volatile"
    history: History = "keep_last"
    lifespan_ns: int = 0

    def __post_init__(self) -> None:
        if self.depth < 0:
            raise ValueError(f"QoS depth must be >= 0, got {self.depth}")
        if self.reliability not in ("reliable", "best_effort"):
            raise ValueError(f"QoS reliability must be reliable|best_effort, got {self.reliability!r}")
        if self.durability not in ("volatile", "transient_local"):
            raise ValueError(f"QoS durability must be volatile|transient_local, got {self.durability!r}")
        if self.history not in ("keep_last", "keep_all"):
            raise ValueError(f"QoS history must be keep_last|keep_all, got {self.history!r}")
        if self.lifespan_ns < 0:
            raise ValueError(f"QoS lifespan must be >= 0 ns (0: infinite), got {self.lifespan_ns}")


DEFAULT = QoS()
SENSOR_DATA = QoS(depth=5, reliability="best_effort")
LATCHED = QoS(depth=1, durability="transient_local")
SERVICES = QoS(depth=10)
ACTION_STATUS = QoS(depth=1, durability="transient_local")
CLOCK = QoS(depth=1, reliability="best_effort")


def adapted_to(offered: Sequence[QoS], depth: int = 10) -> QoS:
    """A subscription QoS matching every publisher in ``offered``, as rosbag2 and ``ros2 topic echo`` adapt it:
    transient_local when all of them keep their samples (so latched messages arrive), best_effort when all of
    them are, reliable and volatile otherwise; history depth ``depth``."""
    durable = bool(offered) and all(q.durability == "transient_local" for q in offered)
    best_effort = bool(offered) and all(q.reliability == "best_effort" for q in offered)
    return QoS(
        depth=depth,
        reliability="best_effort" if best_effort else "reliable",
        durability="transient_local" if durable else "volatile",
    )
