"""Names are names: a config value that names a preset is looked up, never joined into a path.

The attack (issue 31): `algorithm.preset` was joined to the presets folder unchecked, and
the schema error quoted the loaded file back, so an admin's SubmitRun with the preset
pointing at the gateway's tokens file (by absolute path, or by `../` from the presets
folder; the loader appended `.yaml`) got every user's token in the HTTP 400 body. Here a
real gateway on real ports (HTTP and gRPC, an admin token) and the real `meshrl train
--dry-run` in a subprocess are each handed both forms: each is refused in one line naming
the key, and no token of the tokens file appears in any response, stdout or stderr.

Run: .venv/bin/python -m pytest tests/security/test_names_attacks.py -q
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import aiohttp
import grpc
import pytest
import pytest_asyncio

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.config.load import PRESETS_DIR
from meshrl.gateway.auth.tenant import TenantPolicy
from tests.fixtures.gateway import gateway_for

ADMIN = "admin-token-names-0123456789abcdef"
VIEWER = "viewer-token-names-fedcba9876543210"
REFUSED = "is not a known preset"
pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(tmp_path_factory):
    """(HTTP session, gRPC stub, the tenant data root, the gateway's tokens file)."""
    top = tmp_path_factory.mktemp("names")
    runs, data, own = top / "runs", top / "tenant-data", top / "gateway"
    for folder in (runs, data / "model", own):
        folder.mkdir(parents=True)
    (data / "train.jsonl").write_text('{"prompt": [{"role": "user", "content": "1+1?"}]}\n')
    policy = TenantPolicy(roots=[data])
    gw = await gateway_for(runs, own, tenants=policy, ada=("admin", ADMIN), vic=("viewer", VIEWER))
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}")
    async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}") as http:
        yield http, gateway_pb2_grpc.GatewayServiceStub(channel), data, own / "tokens.yaml"
    await channel.close()
    await gw.stop()


def presets_naming(tokens_file) -> dict[str, str]:
    """The tokens file as a preset name: absolute, and relative to the presets folder (`.yaml`
    left off: the old loader appended it)."""
    stem = tokens_file.with_suffix("")
    return {"absolute": str(stem), "dot-dot": os.path.relpath(stem, PRESETS_DIR)}


def config_yaml(data, preset: str) -> str:
    return (
        f"model: {{path: {data / 'model'}}}\ndata: {{train: {data / 'train.jsonl'}}}\n"
        f"algorithm: {{preset: '{preset}'}}\n"
    )


def assert_refused_without_tokens(text: str) -> None:
    assert REFUSED in text and "algorithm.preset=" in text, text
    for token in (ADMIN, VIEWER, "admin-token", "viewer-token"):
        assert token not in text, f"the tokens file leaked: {text}"


@pytest.mark.parametrize("form", ["absolute", "dot-dot"])
async def test_submit_over_http_names_the_tokens_file_as_preset(gateway, form):
    http, _, data, tokens_file = gateway
    preset = presets_naming(tokens_file)[form]
    body = {"name": f"http-{form}", "config_yaml": config_yaml(data, preset), "overrides": []}
    async with http.post("/api/runs", json=body, headers={"Authorization": f"Bearer {ADMIN}"}) as r:
        status, text = r.status, await r.text()
    assert status == 400, text
    assert_refused_without_tokens(text)
    assert "\n" not in json.loads(text)["error"], text


@pytest.mark.parametrize("form", ["absolute", "dot-dot"])
async def test_submit_over_grpc_names_the_tokens_file_as_preset(gateway, form):
    _, stub, data, tokens_file = gateway
    preset = presets_naming(tokens_file)[form]
    request = pb.SubmitRunRequest(name=f"grpc-{form}", config_yaml=config_yaml(data, preset))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.SubmitRun(request, metadata=(("authorization", f"Bearer {ADMIN}"),))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "\n" not in refused.value.details()
    assert_refused_without_tokens(refused.value.details())


@pytest.mark.parametrize("form", ["absolute", "dot-dot"])
async def test_cli_dry_run_names_the_tokens_file_as_preset(gateway, tmp_path, form):
    _, _, data, tokens_file = gateway
    config = tmp_path / "run.yaml"
    config.write_text(config_yaml(data, presets_naming(tokens_file)[form]))
    done = subprocess.run(
        [sys.executable, "-m", "meshrl.cli.main", "train", str(config), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("meshrl: error: ")
    assert_refused_without_tokens(done.stderr)


async def test_a_part_named_by_import_path_is_refused_before_any_import(gateway, tmp_path, monkeypatch):
    """Validation looks `package.module:function` up with find_spec, which imports the parent
    package: the gateway refused such a part only after that, so a package on its path ran
    its `__init__` in the gateway. Now the submitted tree is checked first."""
    http, _, data, _ = gateway
    package = tmp_path / "planted_names_pkg"
    package.mkdir()
    marker = tmp_path / "imported"
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "mod.py").write_text("def fn(logprobs):\n    return logprobs\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    part = "preset: 'grpo', policy_loss: 'planted_names_pkg.mod:fn'"
    yaml_text = config_yaml(data, "grpo").replace("preset: 'grpo'", part)
    body = {"name": "import-path", "config_yaml": yaml_text, "overrides": []}
    async with http.post("/api/runs", json=body, headers={"Authorization": f"Bearer {ADMIN}"}) as r:
        status, text = r.status, await r.text()
    assert status == 400 and "may not name a part by import path" in text, text
    assert not marker.exists(), "the gateway imported the submitted package"


INTERPRETERS = {  # the adapters' interpreter keys, each aimed at a program of the host
    "reasoning-gym-rule": (
        "reward: {components: [{name: c, kind: reasoning_gym, params: {python: /bin/sh}}]}\n",
        "reward.components[0].params.python",
    ),
    "textarena": (
        "environment: {name: g, textarena: {game: GuessTheNumber-v0, python: /usr/bin/env}}\n",
        "environment.textarena.python",
    ),
}


@pytest.mark.parametrize("case", list(INTERPRETERS))
async def test_a_submitted_run_cannot_choose_an_interpreter(gateway, case):
    """An adapter's `python:` names the program its service starts: from a submitted config,
    any executable of the host run as the gateway's user. Refused, naming the key."""
    http, _, data, _ = gateway
    extra, key = INTERPRETERS[case]
    yaml_text = config_yaml(data, "grpo") + extra
    body = {"name": f"interpreter-{case}", "config_yaml": yaml_text, "overrides": []}
    async with http.post("/api/runs", json=body, headers={"Authorization": f"Bearer {ADMIN}"}) as r:
        status, text = r.status, await r.text()
    assert status == 400, text
    assert f"{key}: a submitted run may not choose an interpreter" in json.loads(text)["error"], text
