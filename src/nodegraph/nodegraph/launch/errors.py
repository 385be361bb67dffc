"""Exceptions of the launch layer; ``LaunchError`` is the base of all of them."""


class LaunchError(Exception):
    """Base class of launch errors."""


class LaunchDescriptionError(LaunchError, ValueError):
    """A launch description is inconsistent (a bug in the description, not in the user's input)."""


class LaunchArgumentError(LaunchError, ValueError):
    """The launch arguments given by the user are invalid."""


class UnknownLaunchError(LaunchError, LookupError):
    """No launch of that name is registered."""


class ExecutableNotFoundError(LaunchError, LookupError):
    """A node's (package, executable) does not resolve to a program."""


class ProcessFailedError(LaunchError, RuntimeError):
    """A supervised process exited, or did not print what was awaited in time."""
