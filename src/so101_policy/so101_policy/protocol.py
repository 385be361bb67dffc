"""The GR00T N1.6 policy-server wire format: msgpack maps, numpy arrays as ``np.save`` bytes.

An ndarray travels as ``{"__ndarray_class__": True, "as_npy": <np.save(arr, allow_pickle=False) bytes>}``; a
request is ``{"endpoint": str, "data": {...}, "api_token": str?}``; errors come back as ``{"error": str}``.
Decoding never unpickles (object arrays are refused) and bounds the message size. The ``.npy`` bytes are built
here, byte for byte what ``np.save`` writes, with one copy of the array's data (:func:`npy_bytes`), and read
back with one copy into a writeable array, as ``np.load`` returns it (:func:`npy_array`). A ``ModalityConfig``
travels as ``{"__ModalityConfig_class__": True, "as_json": {field: value}}`` (a map: N1.6's ``MsgSerializer``
decodes it with ``ModalityConfig(**obj["as_json"])``). N1.5's dialect of the same wire is :mod:`.protocol_n15`.

Observation (nested N1.6 format, B = batch, T = 1 time step):
``{"video": {cam: uint8 (B, T, H, W, 3)}, "state": {"single_arm": float32 (B, T, 5), "gripper": float32 (B, T, 1)},
"language": {"annotation.human.task_description": [[str]] * B}}``; action ``{"single_arm": (B, H, 5),
"gripper": (B, H, 1)}`` float32 in dataset (LeRobot) units.
"""

from __future__ import annotations

import io
import math
from typing import Any

import msgpack
import numpy as np
from so101_core.lerobot_schema import LANGUAGE_KEY, modality_configs

from .errors import ProtocolError

NDARRAY_TAG = "__ndarray_class__"
MODALITY_TAG = "__ModalityConfig_class__"
PROTOCOLS = ("n1.6", "n1.5")
"""GR00T versions whose wire a server can speak: N1.6 (this module) and N1.5 (:mod:`.protocol_n15`)."""
DEFAULT_PROTOCOL = "n1.6"
ENDPOINTS = ("ping", "kill", "get_action", "reset", "get_modality_config")
DEFAULT_PORT = 5555
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # 64 MiB: 3 cameras x 640x480 RGB is under 1 MiB
_DIRECT_KINDS = "biufc"  # bool, integers, floats, complex (either byte order): npy_bytes writes them itself


def npy_bytes(array: np.ndarray) -> bytes | bytearray:
    """``np.save(array, allow_pickle=False)``'s bytes with one copy of the data: the format-1.0 header, then the
    elements in C order, or in Fortran order for an array that is Fortran- and not C-contiguous (``np.save``'s
    rule); a non-contiguous view is made C-contiguous first (one more copy, as ``np.save`` makes).

    Raises:
        ProtocolError: an object array (it would need pickle).
    """
    if array.dtype.hasobject:
        raise ProtocolError("object arrays cannot be sent (they would need pickle)")
    if array.dtype.kind not in _DIRECT_KINDS:  # strings, datetimes, structured: rare here, np.save writes them
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=False)
        return buf.getvalue()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(array))
    fortran = array.flags.f_contiguous and not array.flags.c_contiguous
    data = array.T if fortran else np.ascontiguousarray(array)  # C-contiguous, the bytes in np.save's order
    out = bytearray(header.getbuffer())
    out += memoryview(data.reshape(-1).view(np.uint8))
    return out


def npy_array(raw: bytes) -> np.ndarray:
    """The array of ``.npy`` bytes, as ``np.load(allow_pickle=False)`` reads it: its own writeable memory (one copy
    of the data), Fortran-ordered where the header says so; bytes past the data are ignored.

    Raises:
        ProtocolError: not ``.npy`` bytes, a malformed header, an object (pickled) array, or fewer data bytes than
            the header's shape and dtype need.
    """
    fmt = np.lib.format
    stream = io.BytesIO(raw)  # shares ``raw``'s memory
    try:
        version = fmt.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(stream)
        else:  # format 3.0 (structured, utf-8 field names) or an unknown version: np.load reads or refuses it
            return _np_load(raw)
    except ValueError as exc:
        raise ProtocolError(f"bad ndarray bytes: {exc}") from exc
    if dtype.hasobject:
        raise ProtocolError("refused ndarray: object arrays cannot be loaded without pickle")
    if any(n < 0 for n in shape):
        raise ProtocolError(f"bad ndarray bytes: negative dimension in shape {shape}")
    count = math.prod(shape)
    offset = stream.tell()
    if len(raw) - offset < count * dtype.itemsize:
        raise ProtocolError(
            f"bad ndarray bytes: shape {shape} of {dtype} needs {count * dtype.itemsize} bytes, got {len(raw) - offset}"
        )
    flat: np.ndarray
    if count == 0 or dtype.itemsize == 0:  # nothing to read (np.load does the same)
        flat = np.ndarray(count, dtype=dtype)
    else:
        flat = np.frombuffer(raw, dtype=dtype, count=count, offset=offset).copy()
    return flat.reshape(shape[::-1]).transpose() if fortran else flat.reshape(shape)


def _np_load(raw: bytes) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except ValueError as exc:  # pickled (object) arrays are refused by allow_pickle=False
        raise ProtocolError(f"refused ndarray: {exc}") from exc
    except Exception as exc:
        raise ProtocolError(f"bad ndarray bytes: {exc}") from exc
    if not isinstance(array, np.ndarray):
        raise ProtocolError(f"bad ndarray bytes: not an .npy array but {type(array).__name__}")
    return array


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return {NDARRAY_TAG: True, "as_npy": npy_bytes(obj)}
    if isinstance(obj, np.generic):  # numpy scalars: msgpack cannot pack them; send the Python value
        return obj.item()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def _decode(obj: dict[Any, Any]) -> Any:
    if obj.get(NDARRAY_TAG) is True:
        raw = obj.get("as_npy")
        if not isinstance(raw, bytes):
            raise ProtocolError("ndarray without 'as_npy' bytes")
        return npy_array(raw)
    return obj


def pack(data: Any) -> memoryview:
    """msgpack bytes of ``data`` (dicts, lists, str, numbers, ndarrays): a view of the packer's own buffer (no
    final copy of a large message into a ``bytes``; ``bytes(...)`` makes one)."""
    packer = msgpack.Packer(default=_encode, use_bin_type=True, autoreset=False)
    try:
        packer.pack(data)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"cannot pack message: {exc}") from exc
    return packer.getbuffer()


def unpack(raw: bytes | memoryview, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> Any:
    """Decode msgpack bytes (ndarrays restored, never unpickled).

    Raises:
        ProtocolError: over ``max_bytes``, malformed msgpack, or a refused array.
    """
    if len(raw) > max_bytes:
        raise ProtocolError(f"message of {len(raw)} bytes exceeds the limit of {max_bytes} bytes")
    try:
        return msgpack.unpackb(
            raw,
            object_hook=_decode,
            raw=False,
            strict_map_key=False,
            max_bin_len=max_bytes,
            max_str_len=max_bytes,
        )
    except ProtocolError:
        raise
    except Exception as exc:
        raise ProtocolError(f"malformed msgpack: {type(exc).__name__}: {exc}") from exc


def modality_config_reply(cameras: tuple[str, ...], horizon: int) -> dict[str, Any]:
    """N1.6 ``get_modality_config`` reply of a policy seeing ``cameras`` and returning ``horizon`` actions: every field
    of N1.6's ``ModalityConfig`` (the optional ones None: our policies return absolute actions, no relative ones)."""
    return {
        modality: {
            MODALITY_TAG: True,
            "as_json": {
                "delta_indices": list(config.delta_indices),
                "modality_keys": list(config.modality_keys),
                "sin_cos_embedding_keys": None,
                "mean_std_embedding_keys": None,
                "action_configs": None,
            },
        }
        for modality, config in modality_configs(cameras, horizon).items()
    }


def _array(group: Any, key: str, where: str) -> np.ndarray:
    if not isinstance(group, dict) or key not in group:
        raise ProtocolError(f"observation.{where} lacks {key!r}")
    value = group[key]
    if not isinstance(value, np.ndarray):
        raise ProtocolError(f"observation.{where}.{key} must be an ndarray, got {type(value).__name__}")
    return value


def check_observation(obs: Any, cameras: tuple[str, ...]) -> tuple[int, str]:
    """Validate a nested N1.6 observation; returns (batch size B, task text of batch item 0).

    Raises:
        ProtocolError: a missing key, wrong dtype or shape (message names the field).
    """
    if not isinstance(obs, dict):
        raise ProtocolError("observation must be a map with 'video', 'state', 'language'")
    arm = _array(obs.get("state"), "single_arm", "state")
    grip = _array(obs.get("state"), "gripper", "state")
    if arm.ndim != 3 or arm.shape[2] != 5:
        raise ProtocolError(f"observation.state.single_arm must be (B, T, 5), got {arm.shape}")
    b, t = arm.shape[:2]
    if grip.shape != (b, t, 1):
        raise ProtocolError(f"observation.state.gripper must be ({b}, {t}, 1), got {grip.shape}")
    for name, value in (("single_arm", arm), ("gripper", grip)):
        if not np.issubdtype(value.dtype, np.floating):
            raise ProtocolError(f"observation.state.{name} must be float, got {value.dtype}")
    if b < 1 or t < 1:
        raise ProtocolError(f"observation batch and time must be >= 1, got B={b} T={t}")
    for cam in cameras:
        img = _array(obs.get("video"), cam, "video")
        if img.dtype != np.uint8 or img.ndim != 5 or img.shape[:2] != (b, t) or img.shape[4] != 3:
            raise ProtocolError(
                f"observation.video.{cam} must be uint8 ({b}, {t}, H, W, 3), got {img.dtype} {img.shape}"
            )
    lang = obs.get("language")
    texts = lang.get(LANGUAGE_KEY) if isinstance(lang, dict) else None
    if (
        not isinstance(texts, list)
        or len(texts) != b
        or not all(isinstance(x, list) and len(x) == 1 and isinstance(x[0], str) for x in texts)
    ):
        raise ProtocolError(f"observation.language.{LANGUAGE_KEY} must be [[str]] with {b} items")
    return b, texts[0][0]


def check_action(action: Any) -> tuple[int, int]:
    """Validate an action chunk ``{"single_arm": (B, H, 5), "gripper": (B, H, 1)}``; returns (B, H)."""
    if not isinstance(action, dict):
        raise ProtocolError(f"action must be a map, got {type(action).__name__}")
    arm, grip = action.get("single_arm"), action.get("gripper")
    if not isinstance(arm, np.ndarray) or arm.ndim != 3 or arm.shape[2] != 5:
        raise ProtocolError(f"action.single_arm must be (B, H, 5), got {getattr(arm, 'shape', arm)}")
    if not isinstance(grip, np.ndarray) or grip.shape != (*arm.shape[:2], 1):
        raise ProtocolError(f"action.gripper must be {(*arm.shape[:2], 1)}, got {getattr(grip, 'shape', grip)}")
    return int(arm.shape[0]), int(arm.shape[1])


def observation(images: dict[str, np.ndarray], state: np.ndarray, task: str) -> dict[str, Any]:
    """Nested N1.6 observation of one step: ``images`` {cam: (H, W, 3) uint8}, ``state`` (6,) dataset units."""
    s = np.asarray(state, dtype=np.float32).reshape(6)
    return {
        "video": {cam: np.ascontiguousarray(img, dtype=np.uint8)[None, None] for cam, img in images.items()},
        "state": {"single_arm": s[None, None, :5].copy(), "gripper": s[None, None, 5:].copy()},
        "language": {LANGUAGE_KEY: [[task]]},
    }


def chunk_to_array(action: dict[str, Any]) -> np.ndarray:
    """(H, 6) float64 of batch item 0 of an action chunk (arm joints then gripper, dataset units)."""
    check_action(action)
    return np.concatenate([action["single_arm"][0], action["gripper"][0]], axis=1).astype(np.float64)
