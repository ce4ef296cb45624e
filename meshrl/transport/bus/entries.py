"""The shape of every run-KV entry a reader acts on; a malformed one is skipped with a warning.

    entry = replica_entry(e, "environment")   # {"grpc": "host:port", "replica": ...} or None
    version = run_version_of(e)               # int >= 0 or None
    notice, problem = weights_notice_of(e)    # WeightsNotice or (None, why)

Why every reader goes through here: several users may write the run KV (each kind its own
`services.<kind>.*` keys, and anything a JetStream API answer lands on when someone aims a
request's reply subject at a key), so an entry is input, not a promise. A reader that indexed
it directly (`entry["grpc"]`) crashed on `{}` with a KeyError; here it is skipped, and the
warning names the key, its size and what is wrong, once per revision (a poll every few
seconds would repeat it otherwise). Entries above MAX_ENTRY_BYTES are not even parsed.
"""

from __future__ import annotations

import json
import logging

from google.protobuf.message import DecodeError

from meshrl.api.common.v1 import common_pb2 as pb

log = logging.getLogger(__name__)

MAX_ENTRY_BYTES = 64 * 1024  # a replica entry or a notice is a few hundred bytes
MAX_NAME_CHARS = 256
_warned: set[tuple[str, int]] = set()
_WARNED_MAX = 4096


def skip(entry, problem: str) -> None:
    """Log once per (key, revision) that `entry` is skipped because of `problem`."""
    mark = (entry.key, entry.revision)
    if mark in _warned:
        return
    if len(_warned) >= _WARNED_MAX:
        _warned.clear()
    _warned.add(mark)
    log.warning(
        "run KV key %r (%d bytes, revision %d) skipped: %s", entry.key, len(entry.value), entry.revision, problem
    )


def json_object(entry) -> tuple[dict | None, str | None]:
    """The entry as a JSON object, or (None, what is wrong)."""
    if len(entry.value) > MAX_ENTRY_BYTES:
        return None, f"larger than {MAX_ENTRY_BYTES} bytes"
    try:
        data = json.loads(entry.value)
    except (ValueError, UnicodeDecodeError):
        return None, "not JSON"
    if not isinstance(data, dict):
        return None, f"JSON {type(data).__name__}, not an object"
    return data, None


def _address_problem(address) -> str | None:
    if not isinstance(address, str) or not 0 < len(address) <= MAX_NAME_CHARS or any(c.isspace() for c in address):
        return f"'grpc' is {address!r}, not a HOST:PORT string"
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"'grpc' is {address!r}, not HOST:PORT with a port in 1..65535"
    return None


def replica_problem(data: dict, replica: str) -> str | None:
    """What is wrong with a parsed `services.<kind>.<replica>` entry, or None."""
    if (problem := _address_problem(data.get("grpc"))) is not None:
        return problem
    if data.get("replica") != replica:
        return f"'replica' is {str(data.get('replica'))[:MAX_NAME_CHARS]!r}, not the key's {replica!r}"
    return None


def replica_entry(entry, kind: str) -> dict | None:
    """A `services.<kind>.<replica>` entry as a dict with a valid 'grpc' and 'replica', else None."""
    data, problem = json_object(entry)
    if data is not None:
        problem = replica_problem(data, entry.key.removeprefix(f"services.{kind}."))
    if problem is not None:
        skip(entry, f"{problem}; a replica entry is {{'grpc': 'HOST:PORT', 'replica': ID, ...}}")
        return None
    return data


def run_version_of(entry) -> int | None:
    """The `run_version` entry's version (an int >= 0), else None."""
    data, problem = json_object(entry)
    version = (data or {}).get("version")
    if data is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        problem = f"'version' is {str(version)[:MAX_NAME_CHARS]!r}, not an integer >= 0"
    if problem is not None:
        skip(entry, f"{problem}; the learner writes {{'version': V, 'step': S}}")
        return None
    return version


def weights_notice_of(entry) -> tuple[pb.WeightsNotice | None, str | None]:
    """The entry as a WeightsNotice, or (None, what is wrong) for the caller to report."""
    if len(entry.value) > MAX_ENTRY_BYTES:
        return None, f"{len(entry.value)} bytes, larger than {MAX_ENTRY_BYTES}: not a WeightsNotice"
    try:
        return pb.WeightsNotice.FromString(entry.value), None
    except DecodeError as err:
        return None, f"{len(entry.value)} bytes that are not a WeightsNotice ({err})"
