"""verify_file: a checksum the object-store fetch already verified is not hashed again;
any other checksum is, and a mismatch is refused. No engine needed."""
import hashlib

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout import weights as rollout_weights
from meshrl.services.rollout.weights import WeightsRejected, verify_file


def test_a_checksum_verified_by_the_fetch_is_not_hashed_again(tmp_path, monkeypatch):
    path = tmp_path / "w"
    path.write_bytes(b"x" * 100)
    sha = hashlib.sha256(b"x" * 100).hexdigest()
    notice = pb.WeightsNotice(version=3, sha256=sha, size_bytes=100)
    verify_file(path, notice)  # hashed here
    calls = []
    monkeypatch.setattr(rollout_weights, "file_digest", lambda p: calls.append(p) or ("0" * 64, 100))
    verify_file(path, notice, verified_sha256=sha)  # the fetch's checksum is the notice's
    assert calls == []
    with pytest.raises(WeightsRejected, match="sha256"):  # another checksum: hash (here: "0"*64)
        verify_file(path, notice, verified_sha256="f" * 64)
    assert calls == [path]
