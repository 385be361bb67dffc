"""Exceptions of the bag package: one base, ``BagError``, and a subclass per failure kind."""

from __future__ import annotations


class BagError(Exception):
    """Base of every error raised by ``nodegraph.bag``."""


class BagExistsError(BagError, FileExistsError):
    """The target bag directory exists already (a bag is never overwritten)."""


class BagNotFoundError(BagError, FileNotFoundError):
    """The path is neither a rosbag2 directory nor an MCAP file."""


class BagFormatError(BagError):
    """The bag is malformed: bad metadata.yaml, not MCAP, unsupported storage or encoding."""


class BagTopicError(BagError, KeyError):
    """A topic is unknown, registered twice with different types, or its type is unknown."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class BagWriteError(BagError, OSError):
    """The writer thread failed (disk full, directory removed, ...); the bag is closed."""


class BagClosedError(BagError):
    """The writer was used before ``open()`` or after ``close()``."""


class BagArgumentError(BagError, ValueError):
    """An argument is out of range (rate <= 0, negative timestamp, bad compression, ...)."""


class TruncatedBagWarning(UserWarning):
    """A bag file has no summary (recorder killed): read by scanning, up to the last complete chunk."""
