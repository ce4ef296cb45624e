"""`meshrl gateway serve`: every start-up error exits 2 with one line naming the flag or the
file and the rule, never a traceback (issue 23, point 4). A table of bad starts, run through
the CLI's main() in this process; one through the real console entry point."""

import asyncio
import socket
import subprocess
import sys

import pytest

from meshrl.cli.main import main

TOKEN = "t" * 32
GOOD_TOKENS = f"tokens:\n  - {{name: alice, role: admin, token: {TOKEN}}}\n"


def taken_port() -> socket.socket:
    """A listening socket on 127.0.0.1 without SO_REUSEPORT: no server can bind its port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


class StopAtOnce(asyncio.Event):
    """The gateway's stop event, already set: a start this table failed to refuse returns 0
    (and the test fails) instead of serving forever."""

    def __init__(self):
        super().__init__()
        self.set()


# (id, tokens file text or None (unset), extra flags, substrings of the one line); "{root}",
# "{tmp}" and "{taken}" are filled in by the test
CASES = [
    ("runs-root-missing", GOOD_TOKENS, ["--runs-root", "{tmp}/nope"], ["runs root", "is not a directory"]),
    ("runs-root-a-file", GOOD_TOKENS, ["--runs-root", "{tmp}/tokens.yaml"], ["is not a directory"]),
    ("no-tokens-file", None, [], ["no tokens file: set MESHRL_GATEWAY_TOKENS_FILE"]),
    ("tokens-empty", "", [], ["has no 'tokens:' list"]),
    ("tokens-not-yaml", "tokens: [\n", [], ["the tokens file", "is not valid YAML", "(line"]),
    ("tokens-python-tag", "tokens: !!python/object/apply:os.system [id]\n", [], ["is not valid YAML"]),
    ("tokens-alias-bomb", "a: &a [x]\ntokens: [" + ", ".join(["*a"] * 65) + "]\n", [], ["more than 64 YAML aliases"]),
    ("tokens-a-list", "- alice\n", [], ["has no 'tokens:' list"]),
    ("tokens-missing-role", f"tokens: [{{name: a, token: {TOKEN}}}]\n", [], ["tokens[0] needs name, role and token"]),
    (
        "tokens-bad-role",
        f"tokens: [{{name: a, role: root, token: {TOKEN}}}]\n",
        [],
        ["has role 'root'", "viewer, operator, admin"],
    ),
    ("tokens-short", "tokens: [{name: a, role: admin, token: short}]\n", [], ["shorter than 16 characters"]),
    (
        "tokens-unknown-key",
        f"tokens: [{{name: a, rol: admin, role: admin, token: {TOKEN}}}]\n",
        [],
        ["unknown keys ['rol']"],
    ),
    (
        "tokens-name-newline",
        f'tokens: [{{name: "a\\nb", role: admin, token: {TOKEN}}}]\n',
        [],
        ["tokens[0].name", "control character"],
    ),
    (
        "tokens-token-space",
        f'tokens: [{{name: a, role: admin, token: "{TOKEN} x"}}]\n',
        [],
        ["spaces or control characters"],
    ),
    (
        "tokens-duplicate",
        f"tokens: [{{name: a, role: admin, token: {TOKEN}}}, {{name: b, role: viewer, token: {TOKEN}}}]\n",
        [],
        ["b and a have the same token"],
    ),
    ("tokens-a-folder", "{folder}", [], ["cannot read the tokens file"]),
    ("tokens-not-utf8", b"tokens: [\xff]\n", [], ["is not UTF-8 text"]),
    ("port-too-high", GOOD_TOKENS, ["--port", "65536"], ["--port=65536: a port is 0..65535"]),
    ("port-negative", GOOD_TOKENS, ["--port", "-1"], ["--port=-1"]),
    ("grpc-port-too-high", GOOD_TOKENS, ["--grpc-port", "99999"], ["--grpc-port=99999"]),
    ("same-ports", GOOD_TOKENS, ["--port", "18123", "--grpc-port", "18123"], ["both 18123"]),
    (
        "http-port-taken",
        GOOD_TOKENS,
        ["--port", "{taken}", "--grpc-port", "0"],
        ["cannot listen on 127.0.0.1", "pick free ports"],
    ),
    ("grpc-port-taken", GOOD_TOKENS, ["--port", "0", "--grpc-port", "{taken}"], ["cannot listen on 127.0.0.1"]),
    (
        "host-not-here",
        GOOD_TOKENS,
        ["--host", "192.0.2.1", "--port", "0", "--grpc-port", "0"],
        ["cannot listen on 192.0.2.1"],
    ),
    (
        "host-unknown",
        GOOD_TOKENS,
        ["--host", "no-such-host.invalid", "--port", "0", "--grpc-port", "0"],
        ["cannot listen on no-such-host.invalid"],
    ),
    ("tenant-root-missing", GOOD_TOKENS, ["--tenant-root", "{tmp}/absent"], ["--tenant-root", "not a directory"]),
    (
        "tenant-host-url",
        GOOD_TOKENS,
        ["--tenant-host", "http://evil:80"],
        ["--tenant-host 'http://evil:80'", "HOST or HOST:PORT"],
    ),
    ("tenant-host-port", GOOD_TOKENS, ["--tenant-host", "hooks:70000"], ["--tenant-host 'hooks:70000'"]),
    ("tenant-host-empty", GOOD_TOKENS, ["--tenant-host", ":80"], ["--tenant-host ':80'"]),
    (
        "tenant-env-a-token",
        GOOD_TOKENS,
        ["--tenant-env", "sk-live 123"],
        ["--tenant-env is the NAME of an environment variable"],
    ),
]


@pytest.mark.parametrize("tokens, flags, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_start_exits_2_with_one_line(tmp_path, monkeypatch, capsys, tokens, flags, expected):
    import meshrl.gateway.serve

    monkeypatch.setattr(meshrl.gateway.serve.asyncio, "Event", StopAtOnce)  # a start that succeeds returns
    root = tmp_path / "runs"
    root.mkdir()
    path = tmp_path / "tokens.yaml"
    if tokens == "{folder}":
        path.mkdir()
    elif tokens is not None:
        path.write_bytes(tokens if isinstance(tokens, bytes) else tokens.encode())
    if tokens is None:
        monkeypatch.delenv("MESHRL_GATEWAY_TOKENS_FILE", raising=False)
    else:
        monkeypatch.setenv("MESHRL_GATEWAY_TOKENS_FILE", str(path))
    with taken_port() as taken:
        argv = ["gateway", "serve", "--runs-root", str(root), "--port", "0", "--grpc-port", "0"]
        argv += [f.format(tmp=tmp_path, taken=taken.getsockname()[1]) for f in flags]
        rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("meshrl: error: ") and err.count("\n") == 1, err
    for part in expected:
        assert part in err, f"{part!r} not in {err!r}"


def test_the_console_entry_point_prints_no_traceback(tmp_path):
    (tmp_path / "tokens.yaml").write_text("tokens: [\n")
    proc = subprocess.run(
        [sys.executable, "-m", "meshrl.cli.main", "gateway", "serve", "--runs-root", str(tmp_path)],
        capture_output=True,
        text=True,
        env={"MESHRL_GATEWAY_TOKENS_FILE": str(tmp_path / "tokens.yaml"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("meshrl: error: the tokens file") and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.parametrize(
    "argv, expected",
    [
        (
            ["gateway", "serve", "--runs-root", ".", "--port", "x"],
            "meshrl gateway serve: error: argument --port: invalid int value: 'x'",
        ),
        (["gateway", "serve"], "meshrl gateway serve: error: the following arguments are required: --runs-root"),
        (["gateway", "serve", "--runs-root", ".", "--tls"], "meshrl: error: unrecognized arguments: --tls"),
        (["gateway"], "meshrl gateway: error: the following arguments are required: ACTION"),
        (["gateway", "start"], "meshrl gateway: error: argument ACTION: invalid choice: 'start'"),
        (["nosuch"], "meshrl: error: argument COMMAND: invalid choice: 'nosuch'"),
    ],
)
def test_a_usage_error_is_one_line_too(capsys, argv, expected):
    """argparse printed its whole usage before the error; now one line, still exit 2."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and err.startswith(expected), err
