"""Gateway pieces without a server: tokens and roles, run names, following a JSON lines file."""

import asyncio
import json

import grpc
import pytest

from meshrl.gateway.auth.tokens import TokenAuth, bearer, load_tokens
from meshrl.gateway.errors import GatewayError
from meshrl.gateway.runs.root import RunsRoot
from meshrl.run.records import LineTail, follow_rows

TOKENS = """tokens:
  - {name: olga, role: operator, token: operator-token-0123456789}
  - {name: vic, role: viewer, token: viewer-token-0123456789ab}
  - {name: ada, role: admin, token: admin-token-0123456789abc}
"""


@pytest.fixture
def auth(tmp_path):
    path = tmp_path / "tokens.yaml"
    path.write_text(TOKENS)
    return TokenAuth(load_tokens(path))


def test_roles_are_ordered_viewer_operator_admin(auth):
    assert auth.authorize("viewer-token-0123456789ab", "viewer", "ListRuns").name == "vic"
    assert auth.authorize("operator-token-0123456789", "operator", "PauseRun").name == "olga"
    assert auth.authorize("admin-token-0123456789abc", "operator", "PauseRun").name == "ada"
    with pytest.raises(GatewayError) as err:
        auth.authorize("viewer-token-0123456789ab", "operator", "PauseRun")
    assert err.value.code == grpc.StatusCode.PERMISSION_DENIED and err.value.http_status == 403
    assert "PauseRun needs the operator role; vic is a viewer" == err.value.message


def test_unknown_or_missing_token_is_unauthenticated(auth):
    for token in (None, "", "operator-token-012345678"):
        with pytest.raises(GatewayError) as err:
            auth.authenticate(token)
        assert err.value.code == grpc.StatusCode.UNAUTHENTICATED and err.value.http_status == 401


def test_bad_tokens_files_say_what_to_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("MESHRL_GATEWAY_TOKENS_FILE", raising=False)
    with pytest.raises(ValueError, match="set MESHRL_GATEWAY_TOKENS_FILE"):
        load_tokens()
    bad = tmp_path / "t.yaml"
    bad.write_text("tokens:\n  - {name: x, role: root, token: abcdefghijklmnopqrstuvwxyz}\n")
    with pytest.raises(ValueError, match="role 'root'; use one of viewer, operator, admin"):
        load_tokens(bad)
    bad.write_text("tokens:\n  - {name: x, role: viewer, token: short}\n")
    with pytest.raises(ValueError, match="shorter than 16 characters"):
        load_tokens(bad)


def test_bearer_header():
    assert bearer("Bearer abc") == "abc" and bearer("bearer  abc ") == "abc"
    assert bearer("Basic abc") is None and bearer(None) is None


def test_run_names_cannot_leave_the_root(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.yaml").write_text("{}")
    (tmp_path / "not-a-run").mkdir()
    root = RunsRoot(tmp_path)
    assert root.names() == ["a"]
    for name in ("../a", "a/..", ".hidden", ""):
        with pytest.raises(GatewayError) as err:
            root.path(name)
        assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(GatewayError) as err:
        root.path("not-a-run")
    assert err.value.code == grpc.StatusCode.NOT_FOUND


def test_line_tail_reads_whole_lines_and_restarts_on_a_shorter_file(tmp_path):
    path = tmp_path / "m.jsonl"
    tail = LineTail(path)
    assert tail.new_lines() == []
    path.write_text('{"step": 0}\n{"step": 1}\n{"ste')
    assert tail.new_lines() == [(0, '{"step": 0}'), (1, '{"step": 1}')]
    with path.open("a") as fh:
        fh.write('p": 2}\n')
    assert tail.new_lines() == [(2, '{"step": 2}')]
    path.write_text('{"step": 0}\n')  # rewritten by a resumed learner
    assert tail.new_lines() == [(0, '{"step": 0}')]


def test_follow_rows_yields_new_rows_until_the_run_ends(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"step": i}) + "\n" for i in range(3)))
    alive = {"yes": True}

    async def collect():
        rows = []
        async for index, row in follow_rows(path, from_index=1, follow=True, alive=lambda: alive["yes"], poll_s=0.01):
            rows.append((index, row["step"]))
            if index == 2:
                with path.open("a") as fh:
                    fh.write('{"step": 3}\nnot json\n{"step": 5}\n')
                alive["yes"] = False
        return rows

    assert asyncio.run(collect()) == [(1, 1), (2, 2), (3, 3), (5, 5)]
