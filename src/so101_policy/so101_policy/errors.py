"""The one exception base of so101_policy and its specific subclasses."""

from __future__ import annotations

from so101_core.config import ConfigError as CoreConfigError


class PolicyError(RuntimeError):
    """Base of so101_policy's errors."""


class ProtocolError(PolicyError):
    """A message that does not follow the GR00T N1.6 wire format (malformed, too large, pickled, wrong shape)."""


class ServerError(PolicyError):
    """The policy server answered ``{"error": ...}``."""


class ServerTimeout(PolicyError):  # noqa: N818 (reads like the event it reports)
    """The policy server did not answer within the client's timeout (dead, hung or unreachable)."""


class ConfigError(PolicyError, CoreConfigError):
    """An invalid train / eval / policy configuration or training input: the core's ``(field, message, file=)``,
    ``field`` the dotted path of what is wrong (``train.batch_size``, ``dataset``, ``sweep.runs``)."""

    def __init__(self, field: str, message: str, *, file: str | None = None) -> None:
        CoreConfigError.__init__(self, field, message, file=file)


class CheckpointError(PolicyError):
    """A checkpoint directory that cannot be loaded."""
