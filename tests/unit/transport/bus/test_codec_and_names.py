"""Packed arrays and subject/stream names (pure, no server)."""

import numpy as np
import pytest

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.codec import pack_float32, pack_int32, pack_uint8, unpack_float32, unpack_int32, unpack_uint8


def test_int32_round_trip_is_little_endian():
    data = pack_int32([1, 258, -1])
    assert data == b"\x01\x00\x00\x00\x02\x01\x00\x00\xff\xff\xff\xff"
    out = unpack_int32(data)
    assert out.dtype == np.dtype("<i4") and out.tolist() == [1, 258, -1]


def test_float32_round_trip_from_numpy_and_list():
    assert pack_float32([1.0, -2.5]) == b"\x00\x00\x80\x3f\x00\x00\x20\xc0"
    values = np.array([-0.125, 3.5, 1e-8], dtype=np.float64)
    np.testing.assert_array_equal(unpack_float32(pack_float32(values)), values.astype(np.float32))
    assert unpack_float32(b"").size == 0 and pack_int32([]) == b""


def test_int32_from_big_endian_and_int64_input():
    ids = np.array([5, 70000], dtype=">i8")
    assert unpack_int32(pack_int32(ids)).tolist() == [5, 70000]


def test_bad_inputs_fail_clearly():
    with pytest.raises(ValueError, match="not a multiple of 4"):
        unpack_int32(b"\x00\x01\x02")
    with pytest.raises(ValueError, match="1-D"):
        pack_int32(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(ValueError, match="token ids and flags must be integers"):
        pack_int32([1.5])


def test_uint8_flags_round_trip_one_byte_each():
    """`Sample.loss_mask`: one byte per response token."""
    assert pack_uint8([1, 0, 0, 1]) == b"\x01\x00\x00\x01"
    out = unpack_uint8(pack_uint8(np.array([1, 1, 0], dtype=np.int64)))
    assert out.dtype == np.uint8 and out.tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match=r"must lie in \[0, 255\], got -1..1"):
        pack_uint8([1, -1])
    with pytest.raises(ValueError, match="must be integers"):
        pack_uint8([0.5])


def test_names_per_run_and_stage():
    assert names.stage_subject("exp.1 a", "prompts") == "meshrl.exp_1_a.prompts"
    assert names.stage_stream("run-7", "ready") == "MESHRL_run-7_READY"
    assert names.dead_subject("r") == "meshrl.r.dead"
    assert names.events_subject("r") == "meshrl.r.events"
    assert names.weights_loaded_subject("r") == "meshrl.r.weights.loaded"
    assert names.kv_bucket("r*>") == "meshrl_r___state"
    assert names.object_bucket("r") == "meshrl_r_weights"
    assert names.WEIGHTS_NOTICE_KEY == "weights_notice"
    assert names.weights_object_name(12) == "weights-v0000000012.safetensors"
    with pytest.raises(ValueError, match="unknown stage 'score'.*prompts, generated, scored, ready"):
        names.stage_subject("r", "score")
    with pytest.raises(ValueError, match="run id is empty"):
        names.run_token("")
