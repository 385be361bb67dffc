"""Content fingerprints: canonical-JSON hashes of config sections and manifests of output directories."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

from so101_core.atomic import TMP_SUFFIX

CHUNK = 1 << 20


def canonical(value: Any) -> Any:
    """``value`` with dataclasses, tuples, paths and sets turned into plain JSON types (stable order)."""
    if is_dataclass(value) and not isinstance(value, type):
        return canonical(asdict(value))
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(canonical(v) for v in value)
    if isinstance(value, Path):
        return str(value)
    return value


def hash_json(value: Any) -> str:
    """sha256 (hex, 16 chars) of ``value``'s canonical JSON."""
    text = json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def hash_file(path: Path) -> str:
    """sha256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class FileEntry:
    """One file of a manifest: path relative to the manifest root, size (bytes), sha256."""

    path: str
    size: int
    sha256: str


def manifest(root: Path, *, exclude: tuple[str, ...] = ()) -> list[FileEntry]:
    """Every regular file under ``root`` (sorted), except temp files and the top-level names in ``exclude``."""
    entries: list[FileEntry] = []
    if not root.is_dir():
        return entries
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or p.is_symlink() or rel.parts[0] in exclude or p.name.endswith(TMP_SUFFIX):
            continue
        entries.append(FileEntry(str(rel), p.stat().st_size, hash_file(p)))
    return entries


def manifest_hash(entries: list[FileEntry]) -> str:
    """One hash over a manifest's paths, sizes and contents."""
    return hash_json([[e.path, e.size, e.sha256] for e in entries])


def intact(root: Path, entries: list[dict[str, Any]]) -> str | None:
    """None when every recorded file is still there with its size; else the first missing or changed path.
    (Sizes only: cheap enough for every run; contents are re-hashed when a stage runs.)"""
    for e in entries:
        p = root / str(e["path"])
        try:
            if p.stat().st_size != int(e["size"]):
                return str(e["path"])
        except OSError:
            return str(e["path"])
    return None
