"""The receiving side of meshrl.transport.weights, without an engine: notices are checked
field by field; a file's size and sha256 must be the notice's (a checksum the object-store
fetch already verified is not hashed again; any other checksum is, and a mismatch is refused);
the opened file is what `opened.path` names, whatever is renamed over its name later.

Run: .venv/bin/python -m pytest tests/unit/transport/weights -q
"""

import hashlib

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.weights import WeightsRejected, check_notice, file_digest, open_verified, receive


def test_a_checksum_verified_by_the_fetch_is_not_hashed_again(tmp_path, monkeypatch):
    path = tmp_path / "w"
    path.write_bytes(b"x" * 100)
    sha = hashlib.sha256(b"x" * 100).hexdigest()
    notice = pb.WeightsNotice(version=3, sha256=sha, size_bytes=100)
    open_verified(path, notice).close()  # hashed here
    calls = []
    monkeypatch.setattr(receive, "fd_digest", lambda fd, kind: calls.append(fd) or ("0" * 64, 100))
    open_verified(path, notice, verified_sha256=sha).close()  # the fetch's checksum is the notice's
    assert calls == []
    with pytest.raises(WeightsRejected, match="sha256"):  # another checksum: hash (here: "0"*64)
        open_verified(path, notice, verified_sha256="f" * 64)
    assert len(calls) == 1


def notice_for(path, **overrides) -> pb.WeightsNotice:
    data = path.read_bytes()
    fields = dict(
        run_id="r",
        version=1,
        transport="shm",
        location=str(path),
        format="safetensors",
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
    )
    return pb.WeightsNotice(**{**fields, **overrides})


def test_file_digest_and_verify(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"x" * 10_000_001)  # crosses the 8 MiB read chunk
    assert file_digest(path) == (hashlib.sha256(b"x" * 10_000_001).hexdigest(), 10_000_001)
    with open_verified(path, notice_for(path)) as opened:
        path.rename(tmp_path / "moved")
        path.write_bytes(b"other")  # a new file under the checked name
        with open(opened.path, "rb") as held:
            assert len(held.read()) == 10_000_001
    with pytest.raises(WeightsRejected, match="sha256"):
        open_verified(tmp_path / "moved", notice_for(tmp_path / "moved", sha256="0" * 64))
    with pytest.raises(WeightsRejected, match="10000001 bytes, the notice says 5"):
        open_verified(tmp_path / "moved", notice_for(tmp_path / "moved", size_bytes=5))
    with pytest.raises(WeightsRejected, match="does not exist on this host"):
        open_verified(tmp_path / "gone", notice_for(path))


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("transport", "nccl", "transport='nccl'"),
        ("format", "gguf", "format='gguf'"),
        ("run_id", "other", "run 'other'"),
        ("sha256", "", "no sha256"),
    ],
)
def test_check_notice_names_the_bad_field(tmp_path, field, value, message):
    path = tmp_path / "w"
    path.write_bytes(b"abc")
    with pytest.raises(WeightsRejected, match=message):
        check_notice(notice_for(path, **{field: value}), "r")


def test_a_blake3_notice_is_checked_with_blake3(tmp_path):
    """The shm transport's notices carry BLAKE3 (meshrl.transport.weights.notice): a match loads, a mismatch or
    a notice without any digest is refused."""
    import blake3

    path = tmp_path / "w.safetensors"
    path.write_bytes(b"y" * 9_000_000)
    good = notice_for(path, sha256="", blake3=blake3.blake3(b"y" * 9_000_000).hexdigest())
    check_notice(good, "r")
    open_verified(path, good).close()
    assert file_digest(path, "blake3") == (good.blake3, 9_000_000)
    with pytest.raises(WeightsRejected, match="blake3 of .* the notice says 0000"):
        open_verified(path, notice_for(path, sha256="", blake3="0" * 64))
    with pytest.raises(WeightsRejected, match="no sha256/blake3"):
        check_notice(notice_for(path, sha256=""), "r")
