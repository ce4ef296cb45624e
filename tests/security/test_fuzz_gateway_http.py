"""A property-based fuzz of the gateway's HTTP API (issue 31, point 6): a real `meshrl gateway
serve` process on a real port gets generated requests (methods, paths with hostile run names,
query strings, headers with and without tokens of each role, bodies of random bytes, random
JSON, deeply nested JSON and SubmitRun bodies carrying fuzzed configs and overrides); every
answer is below 500, and the gateway's log holds no traceback when it stops. Its gRPC
SubmitRun gets fuzzed names, configs, overrides and tokens: every refusal is a status of the
API, never UNKNOWN or INTERNAL.

No tenant root is declared, so no submitted config can name its model: nothing is ever
started (checked: the runs root holds only what the test put there). A fixed set of cases
each run (derandomize); the count is in docs/security.md.

Run: .venv/bin/python -m pytest tests/security/test_fuzz_gateway_http.py -q
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from urllib.parse import quote

import grpc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshrl import run_layout as layout
from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.config import load_config
from meshrl.config.load import dump_config
from tests.fixtures.fuzz_configs import BASE, GARBAGE, fuzz, overrides, yaml_texts

CASES = 250
GRPC_CASES = 100
GRPC_PORT: list[int] = []  # the gateway's gRPC port, once the fixture started it
OWN_ORIGIN = "http://127.0.0.1:PORT"
# what http.client sends in a header: latin-1 without control characters
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"), max_size=10)
ADMIN = "admin-token-fuzz-0123456789abcdef"
VIEWER = "viewer-token-fuzz-0123456789abcdef"
API_CODES = {  # what a refused SubmitRun answers
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
ROUTES = [
    "/api/runs",
    "/api/runs/{run}/status",
    "/api/runs/{run}/checkpoints",
    "/api/runs/{run}/samples",
    "/api/runs/{run}/groups/{group}/trace",
    "/api/runs/{run}/metrics",
    "/api/runs/{run}/alerts",
    "/api/runs/{run}/events",
    "/api/runs/{run}/pause",
    "/api/runs/{run}/resume",
    "/api/runs/{run}/checkpoint",
    "/api/runs/{run}/stop",
    "/api/runs/{run}/scale",
    "/api/runs/{run}/export",
    "/api/runs/{run}/rollback",
    "/api/session",
    "/",
    "/runs/{run}",
]
NAMES = st.sampled_from(["r1", "..", "%2e%2e", ".submitted", "r1%00", "%2Fetc", "nope", "-1"]) | st.text(
    max_size=6
).map(lambda t: quote(t, safe=""))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """(port, runs root, the gateway's log) of a real `meshrl gateway serve` process."""
    top = tmp_path_factory.mktemp("fuzz-gateway")
    runs, run = top / "runs", top / "runs" / "r1"
    run.mkdir(parents=True)
    (run / layout.CONFIG).write_text(dump_config(load_config(base=BASE)))
    (run / layout.METRICS).write_text('{"step": 1, "reward/mean": 0.5}\n{"step": 2, "reward/mean": 0.75}\n')
    tokens, log = top / "tokens.yaml", top / "gateway.log"
    tokens.write_text(
        f"tokens:\n  - {{name: ada, role: admin, token: {ADMIN}}}\n  - {{name: vic, role: viewer, token: {VIEWER}}}\n"
    )
    env = {**os.environ, "MESHRL_GATEWAY_TOKENS_FILE": str(tokens)}
    cmd = [sys.executable, "-m", "meshrl.cli.main", "gateway", "serve", "--runs-root", str(runs)]
    with open(log, "w") as err:
        proc = subprocess.Popen([*cmd, "--port", "0", "--grpc-port", "0"], stdout=subprocess.PIPE, stderr=err, env=env)
        line = proc.stdout.readline().decode()
        assert line.startswith("gateway: http://"), log.read_text()
        GRPC_PORT.append(int(line.split("grpc ")[1].split()[0].rsplit(":", 1)[1]))
        yield int(line.split("/")[2].rsplit(":", 1)[1]), runs, log
        proc.terminate()
        proc.wait(timeout=30)


@st.composite
def requests(draw):
    """(method, path, headers, body) of one request."""
    path = draw(st.sampled_from(ROUTES)).format(run=draw(NAMES), group=draw(NAMES))
    if draw(st.booleans()):
        path += "?" + draw(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2).map(query))
    token = draw(st.sampled_from([None, ADMIN, VIEWER, "x" * 40]) | HEADER_TEXT)
    headers = {} if token is None else {"Authorization": draw(st.sampled_from(["Bearer ", "bearer ", ""])) + token}
    if draw(st.booleans()):
        headers["Content-Type"] = draw(st.sampled_from(["application/json", "text/plain", "x/y;charset=nope"]))
    if draw(st.booleans()):  # as the gateway's own pages send it (filled in with the port)
        headers["Origin"] = draw(st.sampled_from([OWN_ORIGIN, "null", "http://evil.example"]))
    if draw(st.booleans()):
        headers["Cookie"] = "meshrl_gateway_token=" + draw(st.sampled_from([ADMIN, "x"]) | HEADER_TEXT)
    method = draw(st.sampled_from(["GET", "POST", "POST", "POST", "DELETE", "PUT", "HEAD"]))
    return method, path, headers, draw(bodies())


def query(fields: dict) -> str:
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in fields.items() if k != "follow")


def bodies() -> st.SearchStrategy[bytes | None]:
    submit = st.fixed_dictionaries(
        {"name": st.sampled_from(["fz", "..", "r1", "a/b"]) | st.text(max_size=6)},
        optional={"config_yaml": yaml_texts(), "overrides": overrides() | GARBAGE},
    )
    fields = st.dictionaries(st.sampled_from(["reason", "service", "replicas", "step", "to_step", "token"]), GARBAGE)
    as_json = (submit | fields | GARBAGE).map(lambda v: json.dumps(v).encode())
    deep = st.sampled_from([1_500, 20_000]).map(lambda n: b"[" * n + b"]" * n)
    return st.none() | as_json | st.binary(max_size=64) | deep


@fuzz(CASES)
@given(requests())
def test_every_request_is_answered_below_500(gateway, request_):
    port, _, log = gateway
    method, path, headers, body = request_
    headers = {k: v.replace(":PORT", f":{port}") for k, v in headers.items()}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        text = answer.read()
    finally:
        conn.close()
    assert answer.status < 500, (answer.status, method, path, text[:300], log.read_text()[-2000:])


DEEP_CONFIG = {"name": "deep", "config_yaml": "params: " + "[" * 5_000 + "]" * 5_000}  # the YAML composer recursed
FOUND = [  # (method, path, headers, body, the answer): each was a 500
    ("GET", "/api/runs", {"Authorization": "Bearer \x80"}, None, 401),  # a non-UTF-8 header byte: encode failed
    ("POST", "/api/runs", {"Authorization": f"Bearer {ADMIN}", "Content-Type": "x/y;charset=nope"}, b"{}", 400),
    ("POST", "/api/runs", {"Authorization": f"Bearer {ADMIN}"}, b"[" * 20_000 + b"]" * 20_000, 400),
    ("POST", "/api/runs", {"Authorization": f"Bearer {ADMIN}"}, json.dumps(DEEP_CONFIG).encode(), 400),
    ("POST", "/api/session", {}, b"[" * 1_500 + b"]" * 1_500, 400),  # RecursionError
    ("POST", "/api/session", {}, b'{"token": "\\ud800"}', 401),  # a lone surrogate: encode failed
    ("POST", "/api/session", {"Content-Type": "text/plain;charset=nope"}, b'{"token": "x"}', 401),
]


@pytest.mark.parametrize(
    "method, path, headers, body, status",
    FOUND,
    ids=[
        "non-utf8-token",
        "unknown-charset",
        "nested-20000",
        "config-nested-5000",
        "session-nested",
        "session-surrogate",
        "session-charset",
    ],
)
def test_what_the_fuzz_found_is_a_4xx(gateway, method, path, headers, body, status):
    port, _, _ = gateway
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:  # from the gateway's own page: what a browser with its cookie would send
        conn.request(method, path, body=body, headers={"Origin": f"http://127.0.0.1:{port}", **headers})
        answer = conn.getresponse()
        text = answer.read().decode()
    finally:
        conn.close()
    assert answer.status == status, text
    assert "\n" not in json.loads(text)["error"]


@fuzz(GRPC_CASES)
@given(
    st.text(max_size=8),
    yaml_texts(),
    overrides(),
    st.sampled_from([ADMIN, VIEWER, "x" * 40, ""]),
)
def test_every_grpc_submit_is_answered_with_a_status_of_the_api(gateway, name, config_yaml, items, token):
    """SubmitRun over gRPC: refused with a status the API documents, never UNKNOWN/INTERNAL
    (an exception that escaped a handler)."""
    request = pb.SubmitRunRequest(name=name, config_yaml=config_yaml, overrides=items)
    with grpc.insecure_channel(f"127.0.0.1:{GRPC_PORT[0]}") as channel:
        stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.SubmitRun(request, metadata=(("authorization", f"Bearer {token}"),), timeout=60)
    assert refused.value.code() in API_CODES, (refused.value.code(), refused.value.details())
    assert "\n" not in (refused.value.details() or "")


def test_nothing_was_started_and_nothing_was_logged_as_a_crash(gateway):
    """Runs after the fuzz (file order): no run dir appeared, no traceback in the log."""
    _, runs, log = gateway
    assert sorted(p.name for p in runs.iterdir()) in (["r1"], [".submitted", "r1"])
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
