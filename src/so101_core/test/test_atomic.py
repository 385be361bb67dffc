"""Atomic writes: the new file whole or the old one, nothing left beside it after a failed write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from so101_core.atomic import TMP_SUFFIX, read_json, write_json, write_text


def test_write_json_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json"  # parents are made
    assert write_json(path, {"b": 1, "a": [1, 2]}) == path
    assert path.read_text(encoding="utf-8").endswith("\n") and read_json(path) == {"a": [1, 2], "b": 1}
    write_json(path, {"a": Path("x")})  # what JSON lacks is written as its text
    assert read_json(path) == {"a": "x"}
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_text(tmp_path / "done.json", '{"old": true}')

    def no_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_disk)
    with pytest.raises(OSError, match="No space"):
        write_json(path, {"new": True})
    assert read_json(path) == {"old": True}
    assert not any(p.name.endswith(TMP_SUFFIX) for p in tmp_path.iterdir())


def test_read_json_is_none_for_a_missing_or_unreadable_file(tmp_path: Path) -> None:
    assert read_json(tmp_path / "absent.json") is None
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert read_json(tmp_path / "bad.json") is None
