"""Interleaved process output, each line prefixed with a coloured ``[name]`` (ANSI, ``NO_COLOR`` aware)."""

from __future__ import annotations

import os
import sys
import threading
from typing import TextIO

_COLOURS = ("36", "32", "33", "35", "34", "96", "92", "93", "95", "94")
_RED = "31"


def _use_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class PrefixedOutput:
    """Thread-safe line writer; each source name gets a stable colour."""

    LAUNCHER = "launch"

    def __init__(self, stream: TextIO | None = None, colour: bool | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdout
        self._colour = _use_colour(self._stream) if colour is None else colour
        self._colours: dict[str, str] = {}
        self._lock = threading.Lock()

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self._colour else text

    def line(self, source: str, text: str) -> None:
        """Write ``[source] text``."""
        with self._lock:
            code = self._colours.setdefault(source, _COLOURS[len(self._colours) % len(_COLOURS)])
            self._stream.write(f"{self._paint(f'[{source}]', code)} {text}\n")
            self._stream.flush()

    def info(self, text: str) -> None:
        """A message of the launcher itself."""
        self.line(self.LAUNCHER, text)

    def error(self, text: str) -> None:
        with self._lock:
            self._stream.write(f"{self._paint(f'[{self.LAUNCHER}] {text}', _RED)}\n")
            self._stream.flush()
