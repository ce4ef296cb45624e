"""The receiving side of meshrl.transport.weights, without an engine: notices are checked
field by field; a file's size and sha256 must be the notice's (a checksum the object-store
fetch already verified is not hashed again; any other checksum is, and a mismatch is refused).

Run: .venv/bin/python -m pytest tests/unit/weights -q
"""
import hashlib

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.weights import WeightsRejected, check_notice, file_digest, receive, verify_file


def test_a_checksum_verified_by_the_fetch_is_not_hashed_again(tmp_path, monkeypatch):
    path = tmp_path / "w"
    path.write_bytes(b"x" * 100)
    sha = hashlib.sha256(b"x" * 100).hexdigest()
    notice = pb.WeightsNotice(version=3, sha256=sha, size_bytes=100)
    verify_file(path, notice)  # hashed here
    calls = []
    monkeypatch.setattr(receive, "file_digest", lambda p: calls.append(p) or ("0" * 64, 100))
    verify_file(path, notice, verified_sha256=sha)  # the fetch's checksum is the notice's
    assert calls == []
    with pytest.raises(WeightsRejected, match="sha256"):  # another checksum: hash (here: "0"*64)
        verify_file(path, notice, verified_sha256="f" * 64)
    assert calls == [path]


def notice_for(path, **overrides) -> pb.WeightsNotice:
    data = path.read_bytes()
    fields = dict(run_id="r", version=1, transport="shm", location=str(path), format="safetensors",
                  sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
    return pb.WeightsNotice(**{**fields, **overrides})


def test_file_digest_and_verify(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"x" * 10_000_001)  # crosses the 8 MiB read chunk
    assert file_digest(path) == (hashlib.sha256(b"x" * 10_000_001).hexdigest(), 10_000_001)
    verify_file(path, notice_for(path))
    with pytest.raises(WeightsRejected, match="sha256"):
        verify_file(path, notice_for(path, sha256="0" * 64))
    with pytest.raises(WeightsRejected, match="10000001 bytes, the notice says 5"):
        verify_file(path, notice_for(path, size_bytes=5))


@pytest.mark.parametrize("field,value,message", [
    ("transport", "nccl", "transport='nccl'"), ("format", "gguf", "format='gguf'"),
    ("run_id", "other", "run 'other'"), ("sha256", "", "no sha256")])
def test_check_notice_names_the_bad_field(tmp_path, field, value, message):
    path = tmp_path / "w"
    path.write_bytes(b"abc")
    with pytest.raises(WeightsRejected, match=message):
        check_notice(notice_for(path, **{field: value}), "r")
