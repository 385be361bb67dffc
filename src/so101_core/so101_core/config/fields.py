"""Validated access to parsed YAML mappings: every error names the dotted field path."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from so101_core.config.errors import ConfigError


def load_yaml(path: str | Path, root: str, error: type[ConfigError] = ConfigError) -> Fields:
    """Read a YAML file whose top level must be a mapping; ``root`` prefixes field names in errors.

    Every error raised while reading it, and by the returned :class:`Fields`, is an ``error`` (the package's
    :class:`ConfigError` subclass) naming the field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(root, f"cannot read {p}: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(root, f"{p} is not valid YAML: {exc}") from exc
    return Fields(data if data is not None else {}, root, error=error)


class Fields:
    """A mapping plus its dotted path; typed getters that raise :class:`ConfigError` naming the field.

    Keys never read are reported by :meth:`finish` (catches typos such as ``fovvy``).
    """

    def __init__(self, data: Any, path: str, *, error: type[ConfigError] = ConfigError) -> None:
        if not isinstance(data, Mapping):
            raise error(path, f"expected a mapping, got {type(data).__name__}")
        self._data: Mapping[str, Any] = data
        self._path = path
        self._error = error
        self._seen: set[str] = set()

    @property
    def path(self) -> str:
        return self._path

    def names(self) -> list[str]:
        return [str(k) for k in self._data]

    def has(self, key: str) -> bool:
        return key in self._data

    def field(self, key: str) -> str:
        return f"{self._path}.{key}"

    def raw(self, key: str, default: Any = None) -> Any:
        self._seen.add(key)
        if key not in self._data:
            if default is None:
                raise self._error(self.field(key), "missing required field")
            return default
        return self._data[key]

    def sub(self, key: str, default: Mapping[str, Any] | None = None) -> Fields:
        return Fields(self.raw(key, default), self.field(key), error=self._error)

    def num(
        self,
        key: str,
        default: float | None = None,
        *,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
    ) -> float:
        return check_float(self.raw(key, default), self.field(key), lo=lo, hi=hi, lo_open=lo_open, error=self._error)

    def integer(self, key: str, default: int | None = None, *, lo: int | None = None, hi: int | None = None) -> int:
        v = self.raw(key, default)
        name = self.field(key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self._error(name, f"expected an integer, got {v!r}")
        if lo is not None and v < lo:
            raise self._error(name, f"must be >= {lo}, got {v}")
        if hi is not None and v > hi:
            raise self._error(name, f"must be <= {hi}, got {v}")
        return v

    def text(self, key: str, default: str | None = None, *, choices: tuple[str, ...] | None = None) -> str:
        v = self.raw(key, default)
        if not isinstance(v, str):
            raise self._error(self.field(key), f"expected a string, got {v!r}")
        if choices is not None and v not in choices:
            raise self._error(self.field(key), f"must be one of {list(choices)}, got {v!r}")
        return v

    def vec(
        self,
        key: str,
        n: int,
        default: tuple[float, ...] | None = None,
        *,
        lo: float | None = None,
        hi: float | None = None,
    ) -> tuple[float, ...]:
        v = self.raw(key, default)
        name = self.field(key)
        if not isinstance(v, list | tuple) or len(v) != n:
            raise self._error(name, f"expected a list of {n} numbers, got {v!r}")
        return tuple(check_float(x, f"{name}[{i}]", lo=lo, hi=hi, error=self._error) for i, x in enumerate(v))

    def interval(
        self,
        key: str,
        default: tuple[float, float] | None = None,
        *,
        lo: float | None = None,
        hi: float | None = None,
    ) -> tuple[float, float]:
        """A ``[min, max]`` pair with ``min <= max``, both inside ``[lo, hi]``."""
        a, b = self.vec(key, 2, default, lo=lo, hi=hi)
        if a > b:
            raise self._error(self.field(key), f"min {a} is greater than max {b}")
        return a, b

    def finish(self) -> None:
        """Raise if the mapping holds keys that no getter asked for."""
        unknown = sorted(str(k) for k in self._data if k not in self._seen)
        if unknown:
            raise self._error(self.field(unknown[0]), f"unknown field (known: {sorted(self._seen)})")


def check_float(
    v: Any,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    error: type[ConfigError] = ConfigError,
) -> float:
    """Return ``v`` as a finite float inside ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``); else raise ``error``."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise error(name, f"expected a number, got {v!r}")
    f = float(v)
    if not math.isfinite(f):
        raise error(name, f"must be finite, got {v!r}")
    if lo is not None and (f < lo or (lo_open and f <= lo)):
        raise error(name, f"must be {'>' if lo_open else '>='} {lo}, got {f}")
    if hi is not None and f > hi:
        raise error(name, f"must be <= {hi}, got {f}")
    return f
