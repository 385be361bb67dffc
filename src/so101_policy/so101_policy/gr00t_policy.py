"""An Isaac-GR00T N1.6 policy behind our server, only where the ``gr00t`` package imports (Python 3.10, CUDA;
not installable here). Without it, constructing :class:`Gr00tPolicy` raises a clear :class:`PolicyError`.
Users with Isaac-GR00T can also run its own ``run_gr00t_server.py``: our client and policy node speak the same
N1.6 protocol (use ``--api-token``-less servers with ``api_token: ""``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from so101_core.lerobot_schema import ACTION_HORIZON

from .errors import PolicyError
from .protocol import check_observation

EMBODIMENT_TAG = "new_embodiment"


class Gr00tPolicy:
    """Wrap ``gr00t.policy.gr00t_policy.Gr00tPolicy`` (N1.6): same nested observation and action formats."""

    def __init__(self, model_dir: str | Path, device: str = "auto", cameras: tuple[str, ...] = ("ego", "side", "top")):
        try:
            from gr00t.data.embodiment_tags import EmbodimentTag  # type: ignore[import-not-found,unused-ignore]
            from gr00t.policy.gr00t_policy import Gr00tPolicy as Upstream  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            raise PolicyError(
                "GR00T policies need Isaac-GR00T (the 'gr00t' package, Python 3.10 + CUDA), which is not installed: "
                f"{exc}. Serve an ACT checkpoint with --checkpoint, or run Isaac-GR00T's own server "
                "(gr00t/eval/run_gr00t_server.py) and point the policy node at it."
            ) from exc
        dev = "cuda" if device == "auto" else device
        self._policy = Upstream(
            embodiment_tag=EmbodimentTag(EMBODIMENT_TAG), model_path=str(model_dir), device=dev, strict=True
        )
        self.cameras = cameras
        self.horizon = ACTION_HORIZON

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        check_observation(observation, self.cameras)
        action, info = self._policy.get_action(observation, options)
        return dict(action), dict(info or {})

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        return dict(self._policy.reset(options) or {})
