"""deploy/compose/reward-model.yaml (the learned reward model as a Compose override) is valid
against the Compose spec, and, merged over compose.yaml the way Compose merges (`extends`,
volumes by mount path), runs `meshrl serve reward_model` with flags its argparse takes, on the
port its health check asks and run-config-reward-model.yaml's `rm` component calls, as its own
NATS user; every meshrl service reads that config.

    .venv/bin/python -m pytest -q tests/deploy/test_compose_reward_model.py
"""

import pytest

from meshrl.config import load_config
from meshrl.config.reward_model import reward_model_component
from meshrl.transport.bus.credentials import ENV_VAR
from meshrl.transport.bus.subjects import KINDS
from tests.deploy.contract import ENTRYPOINT_ENV, grpc_port, serve_argv
from tests.deploy.test_compose import COMPOSE_DIR, check_jsonschema, load_override, override_services

OVERRIDE = COMPOSE_DIR / "reward-model.yaml"
CONFIG = COMPOSE_DIR / "run-config-reward-model.yaml"


@pytest.fixture(scope="module")
def compose() -> tuple[dict, dict]:
    return load_override(OVERRIDE)


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return override_services(*compose)


def test_valid_against_the_compose_spec():
    done = check_jsonschema(OVERRIDE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_reward_model_service_matches_the_cli_and_the_config(services):
    cfg = load_config(CONFIG)
    svc = services["reward-model"]
    service, flags = serve_argv(svc["command"])
    assert service == "reward_model"
    env = svc["environment"]
    assert all(env.get(k) for k in ENTRYPOINT_ENV) and "MESHRL_REPLICA_ID" not in env  # scales: own ids
    assert "container_name" not in svc and "ports" not in svc
    port = grpc_port(service, flags, cfg, "reward-model-abc")
    assert port == cfg.reward_model.grpc_port
    assert svc["healthcheck"]["test"][:4] == ["CMD", "meshrl", "health", f"127.0.0.1:{port}"]
    assert env["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{port}"
    assert reward_model_component(cfg).address == f"reward-model:{port}"  # what the reward service calls
    assert svc["depends_on"]["nats"]["condition"] == "service_healthy"


def test_it_connects_as_its_own_nats_user(compose, services):
    base, override = compose
    svc = services["reward-model"]
    assert svc["secrets"] == ["nats-reward_model"] and "reward_model" in KINDS
    assert svc["environment"][ENV_VAR] == "/run/secrets/nats-reward_model"
    assert override["secrets"]["nats-reward_model"]["file"] == "./nats-auth/nats-reward_model.json"
    assert {k: v for k, v in svc["environment"].items() if k != ENV_VAR and "HEALTH" not in k} == {
        k: v for k, v in base["x-meshrl"]["environment"].items()
    }  # the same mesh settings as the others


def test_every_meshrl_service_reads_the_reward_model_config(services):
    for name in ("learner", "rollout", "reward", "reference", "reward-model"):
        mounts = [
            v for v in services[name]["volumes"] if v.split(":")[1] == services[name]["environment"]["MESHRL_CONFIG"]
        ]
        assert mounts == [f"./{CONFIG.name}:/etc/meshrl/config.yaml:ro"], name
