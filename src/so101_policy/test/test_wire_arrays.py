"""ndarrays on the N1.6 wire: :func:`~so101_policy.protocol.pack` writes, byte for byte, the message of the
reference encoding (``np.save`` bytes inside msgpack, what GR00T's ``MsgSerializer`` writes) for every layout and
dtype, :func:`~so101_policy.protocol.unpack` reads back what ``np.load`` would, and bytes that are not one ``.npy``
array are refused; the wire-alone benchmark times a round trip with the frames it claims."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import msgpack
import numpy as np
import pytest
from so101_policy.bench_policy import transport_latency
from so101_policy.errors import ProtocolError
from so101_policy.protocol import NDARRAY_TAG, observation, pack, unpack

_rng = np.random.default_rng(7)
_grid = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
ARRAYS: dict[str, np.ndarray] = {
    "uint8 frame": _rng.integers(0, 256, (1, 1, 48, 64, 3), dtype=np.uint8),
    "float32": _rng.normal(size=(2, 16, 5)).astype(np.float32),
    "float64 0-d": np.array(3.25),
    "empty": np.zeros((0, 6), np.float32),
    "empty fortran": np.asfortranarray(np.zeros((2, 0, 3), np.int16)),
    "fortran": np.asfortranarray(_grid),
    "fortran view": _grid.T,
    "non-contiguous slice": _grid[:, ::2, 1:],
    "negative strides": _grid[::-1, :, ::-2],
    "big-endian": _rng.normal(size=(4, 3)).astype(">f4"),
    "bool": _rng.integers(0, 2, (5, 7)).astype(bool),
    "int64 column": np.arange(12, dtype=np.int64).reshape(3, 4)[:, 1],
    "complex": (np.arange(6) + 1j).astype(np.complex64).reshape(2, 3),
    "unicode": np.array(["vial", "rack"]),
    "datetime": np.array(["2026-12-07", "2026-12-08"], dtype="datetime64[D]"),
}


def reference(data: Any) -> bytes:
    """The message as the reference encoding writes it: each ndarray as ``np.save`` bytes."""

    def encode(obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            buf = io.BytesIO()
            np.save(buf, obj, allow_pickle=False)
            return {NDARRAY_TAG: True, "as_npy": buf.getvalue()}
        raise TypeError(type(obj).__name__)

    return bytes(msgpack.packb(data, default=encode, use_bin_type=True))


def npy_message(npy: bytes) -> bytes:
    return bytes(msgpack.packb({"x": {NDARRAY_TAG: True, "as_npy": npy}}, use_bin_type=True))


@pytest.mark.parametrize("name", list(ARRAYS))
def test_an_array_packs_to_the_np_save_bytes_and_back(name: str) -> None:
    array = ARRAYS[name]
    raw = pack({"x": array, "n": 1})
    assert bytes(raw) == reference({"x": array, "n": 1})
    got = unpack(raw)["x"]
    want = np.load(io.BytesIO(msgpack.unpackb(reference(array))["as_npy"]), allow_pickle=False)
    assert got.dtype == array.dtype and got.shape == array.shape
    np.testing.assert_array_equal(got, array)
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous, want.flags.f_contiguous)
    assert got.flags.writeable  # as np.load returns it


def test_an_observation_message_is_the_reference_message() -> None:
    frames = {c: _rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for c in ("ego", "side", "top")}
    request = {"endpoint": "get_action", "data": {"observation": observation(frames, np.arange(6.0), "t")}}
    raw = pack(request)
    assert bytes(raw) == reference(request)
    got = unpack(raw)["data"]["observation"]
    for cam, frame in frames.items():
        np.testing.assert_array_equal(got["video"][cam][0, 0], frame)
    got["video"]["ego"][:] = 0  # writeable, and not a view into the message
    assert bytes(raw) == reference(request)


def _npz() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros(3))
    assert zipfile.is_zipfile(io.BytesIO(buf.getvalue()))
    return buf.getvalue()


def _header(text: str) -> bytes:
    """A format-1.0 ``.npy`` header holding ``text`` (then 8 data bytes)."""
    body = text.encode("latin1") + b"\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body + bytes(8)


MALFORMED = {
    "not npy": (b"hello world, not an array", "bad ndarray bytes"),
    "npz archive": (_npz(), "bad ndarray bytes"),
    "truncated header": (np.lib.format.magic(1, 0) + b"\x40\x00{'descr'", "bad ndarray bytes"),
    "header not a dict": (_header("[1, 2]"), "bad ndarray bytes"),
    "header keys": (_header("{'descr': '<f4', 'shape': (2,)}"), "bad ndarray bytes"),
    "bad dtype": (_header("{'descr': 'nonsense', 'fortran_order': False, 'shape': (2,)}"), "bad ndarray bytes"),
    "negative shape": (_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"), "bad ndarray bytes"),
    "short data": (_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}"), "needs 12 bytes, got 8"),
    "object dtype": (_header("{'descr': '|O', 'fortran_order': False, 'shape': (1,)}"), "refused ndarray"),
    "unknown version": (b"\x93NUMPY\x07\x00" + bytes(16), "refused ndarray"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_bytes_that_are_not_one_npy_array_are_refused(name: str) -> None:
    raw, message = MALFORMED[name]
    with pytest.raises(ProtocolError, match=message):
        unpack(npy_message(raw))


def test_pickled_arrays_are_refused_both_ways() -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ProtocolError, match="refused ndarray"):
        unpack(npy_message(buf.getvalue()))
    with pytest.raises(ProtocolError, match="object arrays cannot be sent"):
        pack({"x": np.array([None], dtype=object)})


def test_transport_latency_times_round_trips_of_the_frames_it_names() -> None:
    out = transport_latency(calls=5, warmup=1, width=64, height=48, cameras=("ego", "top"))
    assert out["frame"] == [64, 48] and out["cameras"] == ["ego", "top"] and out["calls"] == 5
    assert 2 * 64 * 48 * 3 < out["request_bytes"] < 2 * 64 * 48 * 3 + 2048
    assert 0 < out["inference_ms"]["p50"] <= out["inference_ms"]["p99"] <= out["inference_ms"]["max"]
