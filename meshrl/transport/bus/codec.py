"""Packed little-endian arrays for protobuf `bytes` fields (token ids, per-token floats).

Encoding is `np.asarray(x, '<i4'/'<f4').tobytes()`; decoding is `np.frombuffer`, a
zero-copy read-only view (call `.copy()` to write into it). No Python loops.
"""
import numpy as np

_INT32 = np.dtype("<i4")
_FLOAT32 = np.dtype("<f4")


def _pack(values, dtype: np.dtype) -> bytes:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"expected a 1-D array or list, got shape {arr.shape}: flatten it first")
    if dtype == _INT32 and arr.size and arr.dtype.kind not in "iub":
        raise ValueError(f"token ids must be integers, got dtype {arr.dtype}")
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
