"""Packed little-endian arrays for protobuf `bytes` fields (token ids, per-token floats,
per-token 0/1 flags such as `Sample.loss_mask`).

Encoding is `np.asarray(x, '<i4'/'<f4'/'u1').tobytes()`; decoding is `np.frombuffer`, a
zero-copy read-only view (call `.copy()` to write into it). No Python loops.
"""

import numpy as np

_INT32 = np.dtype("<i4")
_FLOAT32 = np.dtype("<f4")
_UINT8 = np.dtype("u1")


def _pack(values, dtype: np.dtype) -> bytes:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"expected a 1-D array or list, got shape {arr.shape}: flatten it first")
    if dtype in (_INT32, _UINT8) and arr.size and arr.dtype.kind not in "iub":
        raise ValueError(f"token ids and flags must be integers, got dtype {arr.dtype}")
    if dtype == _UINT8 and arr.size and (arr.min() < 0 or arr.max() > 255):
        raise ValueError(f"uint8 values must lie in [0, 255], got {arr.min()}..{arr.max()}")
    return arr.astype(dtype, copy=False).tobytes()


def _unpack(data: bytes, dtype: np.dtype) -> np.ndarray:
    if len(data) % dtype.itemsize:
        raise ValueError(
            f"packed {dtype} data has {len(data)} bytes, not a multiple of {dtype.itemsize}: "
            "the field was not written by meshrl.transport.bus.codec or was truncated"
        )
    return np.frombuffer(data, dtype=dtype)


def pack_int32(values) -> bytes:
    return _pack(values, _INT32)


def unpack_int32(data: bytes) -> np.ndarray:
    return _unpack(data, _INT32)


def pack_float32(values) -> bytes:
    return _pack(values, _FLOAT32)


def unpack_float32(data: bytes) -> np.ndarray:
    return _unpack(data, _FLOAT32)


def pack_uint8(values) -> bytes:
    return _pack(values, _UINT8)


def unpack_uint8(data: bytes) -> np.ndarray:
    return _unpack(data, _UINT8)
