"""Crash safety (SIGKILL + recover), queue overflow, writer-thread failures and malformed bags."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from _bagdata import FB, IMG, JS, feedback, image, joint_state
from mcap.reader import make_reader
from nodegraph.bag import (
    BagExistsError,
    BagFormatError,
    BagNotFoundError,
    BagTopicError,
    BagWriteError,
    BagWriter,
    TruncatedBagWarning,
    info,
    read_messages,
    recover,
)
from nodegraph.interfaces import typestore
from nodegraph.testing import wait_until
from rosbags.highlevel import AnyReader

HERE = Path(__file__).parent


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}


RECORDER = textwrap.dedent(
    """
    import sys, time
    from _bagdata import FB, IMG, JS, feedback, image, joint_state
    from nodegraph.bag import BagWriter
    w = BagWriter(sys.argv[1], chunk_size=1_500_000, flush_interval_s=0.3, compression=None).open()
    w.add_topic("/joint_states", JS); w.add_topic("/image", IMG); w.add_topic("/fb", FB)
    img, durable, i = image(7), -1, 0
    while True:
        w.write("/joint_states", 1_000 + i, joint_state(i))
        if i % 3 == 0:
            w.write("/image", 1_000 + i, img)
        if i % 10 == 0:
            w.write("/fb", 1_000 + i, feedback(i))
        i += 1
        time.sleep(0.002)
        if w.stats().durable != durable:
            durable = w.stats().durable
            print(durable, flush=True)
    """
)


def test_sigkilled_recorder_leaves_a_recoverable_bag(tmp_path: Path) -> None:
    bag = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", RECORDER, str(bag)], stdout=subprocess.PIPE, text=True, env=_env())
    durable = 0
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while durable < 60 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "recorder exited early"
            durable = int(line)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert durable >= 60
    assert (bag / "metadata.yaml").exists()  # provisional, written while recording
    with pytest.warns(TruncatedBagWarning):
        streamed = list(read_messages(bag))
    assert len(streamed) >= durable

    summary = recover(bag)
    assert summary.was_truncated and summary.messages >= durable and summary.chunks >= 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncatedBagWarning)
        recovered = list(read_messages(bag, on_truncated="error"))
    assert [m.timestamp_ns for m in recovered] == sorted(m.timestamp_ns for m in streamed)
    assert info(bag).message_count == len(recovered) == summary.messages
    store = typestore()
    for message in recovered:  # every recovered message decodes
        store.deserialize_cdr(message.cdr, message.type_name)
    with AnyReader([bag], default_typestore=store) as reader:
        assert sum(1 for _ in reader.messages()) == len(recovered)
    with (bag / "killed_0.mcap").open("rb") as stream:
        assert make_reader(stream).get_summary() is not None
    assert recover(bag).was_truncated is False  # idempotent


def test_queue_overflow_is_counted_not_silent(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    img = image(1)
    with BagWriter(tmp_path / "small", max_queue_bytes=3 * len(img)) as writer:
        writer.add_topic("/image", IMG)
        results = [writer.write("/image", i, img) for i in range(200)]
        writer.flush()
        dropped = writer.dropped
    assert dropped > 0 and results.count(False) == dropped
    assert writer.dropped_by_topic == {"/image": dropped}
    assert writer.written + dropped == 200
    assert info(tmp_path / "small").message_count == writer.written
    assert "dropped" in caplog.text


def test_removed_directory_fails_loudly(tmp_path: Path) -> None:
    writer = BagWriter(tmp_path / "gone").open()
    writer.add_topic("/joint_states", JS)
    writer.write("/joint_states", 1, joint_state(1))
    for child in (tmp_path / "gone").iterdir():
        child.unlink()
    (tmp_path / "gone").rmdir()
    with pytest.raises(BagWriteError, match="failed"):
        writer.flush(timeout=10)
    with pytest.raises(BagWriteError):
        writer.write("/joint_states", 2, joint_state(2))
    with pytest.raises(BagWriteError):
        writer.close()
    assert writer.error is not None


DISK_FULL = textwrap.dedent(
    """
    import resource, signal, sys
    from _bagdata import IMG, image
    from nodegraph.bag import BagWriter, BagWriteError
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (3_000_000, 3_000_000))
    w = BagWriter(sys.argv[1], chunk_size=1_000_000, compression=None).open()
    w.add_topic("/image", IMG)
    try:
        for i in range(20):
            w.write("/image", i, image(i))
        w.close()
    except BagWriteError as exc:
        print("ERROR", exc)
    """
)


def test_disk_full_surfaces_as_bag_write_error(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", DISK_FULL, str(tmp_path / "full")],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "ERROR" in out.stdout and "File too large" in out.stdout
    summary = recover(tmp_path / "full")  # what reached the disk is still readable
    assert summary.messages >= 1


def test_bad_arguments_and_paths(tmp_path: Path) -> None:
    with pytest.raises(BagWriteError, match="cannot create"):
        BagWriter(Path("/proc/so101-bag-test")).open()
    (tmp_path / "exists").mkdir()
    with pytest.raises(BagExistsError):
        BagWriter(tmp_path / "exists").open()
    with BagWriter(tmp_path / "ok") as writer:
        with pytest.raises(BagTopicError, match="unknown message type"):
            writer.add_topic("/x", "nope_msgs/msg/Nothing")
        with pytest.raises(BagTopicError, match="add_topic"):
            writer.write("/y", 1, b"\x00\x01\x00\x00")
        writer.add_topic("/fb", FB)
        with pytest.raises(BagTopicError, match="recorded as"):
            writer.add_topic("/fb", JS)
        writer.write("/fb", 3, feedback(3))
    assert info(tmp_path / "ok").message_count == 1


def test_malformed_bags_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(BagNotFoundError, match="does not exist"):
        info(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagNotFoundError, match=r"no metadata\.yaml"):
        read_messages(tmp_path / "empty")
    bad_yaml = tmp_path / "badyaml"
    bad_yaml.mkdir()
    (bad_yaml / "metadata.yaml").write_text("rosbag2_bagfile_information: [1, 2")
    with pytest.raises(BagFormatError, match="metadata"):
        info(bad_yaml)
    sqlite = tmp_path / "sqlite"
    sqlite.mkdir()
    (sqlite / "metadata.yaml").write_text(
        "rosbag2_bagfile_information:\n  storage_identifier: sqlite3\n  relative_file_paths: [a.db3]\n"
    )
    with pytest.raises(BagFormatError, match="only 'mcap'"):
        info(sqlite)
    garbage = tmp_path / "garbage.mcap"
    garbage.write_bytes(b"not an mcap file at all")
    with pytest.raises(BagFormatError, match="not an MCAP file"):
        info(garbage)
    with pytest.raises(BagFormatError, match="not an MCAP file"):
        recover(garbage)


def test_interval_flush_makes_a_partial_chunk_durable(tmp_path: Path) -> None:
    import yaml

    with BagWriter(tmp_path / "slow", chunk_size=64 * 1024 * 1024, flush_interval_s=0.1) as writer:
        writer.add_topic("/joint_states", JS)
        for i in range(3):
            writer.write("/joint_states", 10 + i, joint_state(i))
        wait_until(lambda: writer.stats().durable >= 3, 10.0, "three durable messages")
        assert writer.stats().durable == 3
        meta = yaml.safe_load((tmp_path / "slow" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        assert meta["message_count"] == 3
        with pytest.warns(TruncatedBagWarning):
            assert len(list(read_messages(tmp_path / "slow"))) == 3
