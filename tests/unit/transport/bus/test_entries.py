"""Run-KV entries a reader acts on are checked for shape; a malformed one is skipped with one
warning, never a KeyError (meshrl.transport.bus.entries).

Run: .venv/bin/python -m pytest tests/unit/transport/bus/test_entries.py -q
"""

import json
import logging

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus import entries
from meshrl.transport.bus.entries import MAX_ENTRY_BYTES, replica_entry, run_version_of, weights_notice_of
from meshrl.transport.bus.kv import Entry

GOOD = {"grpc": "127.0.0.1:5001", "replica": "env-0", "pid": 7}
_revisions = iter(range(1, 10**6))


def entry(value, key="services.environment.env-0") -> Entry:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return Entry(key, raw, next(_revisions))


def test_a_well_formed_replica_entry_is_kept_whole():
    assert replica_entry(entry(GOOD), "environment") == GOOD
    assert replica_entry(entry({**GOOD, "grpc": "[::1]:65535"}), "environment")["grpc"] == "[::1]:65535"


@pytest.mark.parametrize(
    "value,why",
    [
        ({}, "'grpc' is None"),
        ({"grpc": 5001, "replica": "env-0"}, "'grpc' is 5001"),
        ({"grpc": "127.0.0.1", "replica": "env-0"}, "not HOST:PORT"),
        ({"grpc": "127.0.0.1:0", "replica": "env-0"}, "port in 1..65535"),
        ({"grpc": "127.0.0.1:70000", "replica": "env-0"}, "port in 1..65535"),
        ({"grpc": "evil host:1", "replica": "env-0"}, "not a HOST:PORT string"),
        ({"grpc": "127.0.0.1:5001", "replica": ["env-0"]}, "not the key's 'env-0'"),
        ({"grpc": "127.0.0.1:5001", "replica": "env-1"}, "not the key's 'env-0'"),
        ([GOOD], "JSON list, not an object"),
        (b"not json {", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (json.dumps({**GOOD, "pad": "x" * MAX_ENTRY_BYTES}).encode(), f"larger than {MAX_ENTRY_BYTES} bytes"),
    ],
)
def test_a_malformed_replica_entry_is_skipped_with_a_warning(caplog, value, why):
    with caplog.at_level(logging.WARNING, logger=entries.__name__):
        assert replica_entry(entry(value), "environment") is None
    (record,) = caplog.records
    assert "services.environment.env-0" in record.getMessage() and why in record.getMessage()


def test_the_warning_is_given_once_per_revision(caplog):
    bad = entry({})
    with caplog.at_level(logging.WARNING, logger=entries.__name__):
        for _ in range(3):
            assert replica_entry(bad, "environment") is None
    assert len(caplog.records) == 1


@pytest.mark.parametrize("value,version", [({"version": 4, "step": 9}, 4), ({"version": 0}, 0)])
def test_the_run_version_is_read_from_a_well_formed_entry(value, version):
    assert run_version_of(entry(value, key="run_version")) == version


@pytest.mark.parametrize(
    "value", [{}, {"version": "4"}, {"version": -1}, {"version": True}, {"version": 4.5}, [4], b"\x00", b"null"]
)
def test_a_malformed_run_version_is_none(caplog, value):
    with caplog.at_level(logging.WARNING, logger=entries.__name__):
        assert run_version_of(entry(value, key="run_version")) is None
    assert "run_version" in caplog.records[0].getMessage()


def test_a_weights_notice_is_parsed_and_anything_else_named():
    notice = pb.WeightsNotice(run_id="r", version=3, sha256="ab")
    assert weights_notice_of(entry(notice.SerializeToString(), key="weights_notice")) == (notice, None)
    parsed, problem = weights_notice_of(entry(b'{"type":"io.nats.jetstream.api.v1.account_info_response"}'))
    assert parsed is None and "not a WeightsNotice" in problem
    parsed, problem = weights_notice_of(entry(b"\x0a" * (MAX_ENTRY_BYTES + 1)))
    assert parsed is None and f"larger than {MAX_ENTRY_BYTES}" in problem
