"""deploy/compose/environment.yaml (a run with an environment, as a Compose override) is valid
against the Compose spec, and, merged over compose.yaml the way Compose merges, runs `meshrl
serve environment` with flags its argparse takes, on the port its health check asks and
run-config-environment.yaml's environment.address calls, as its own NATS user; every meshrl
service reads that config; Prometheus scrapes it.

    .venv/bin/python -m pytest -q tests/deploy/test_compose_environment.py
"""

import pytest
import yaml

from meshrl.config import load_config
from meshrl.transport.bus.credentials import ENV_VAR
from meshrl.transport.bus.subjects import KINDS
from tests.deploy.contract import ENTRYPOINT_ENV, grpc_port, serve_argv
from tests.deploy.test_compose import COMPOSE_DIR, check_jsonschema, load_override, override_services

OVERRIDE = COMPOSE_DIR / "environment.yaml"
CONFIG = COMPOSE_DIR / "run-config-environment.yaml"


@pytest.fixture(scope="module")
def compose() -> tuple[dict, dict]:
    return load_override(OVERRIDE)


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return override_services(*compose)


def test_valid_against_the_compose_spec():
    done = check_jsonschema(OVERRIDE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_environment_service_matches_the_cli_and_the_config(services):
    cfg = load_config(CONFIG)
    svc = services["environment"]
    service, flags = serve_argv(svc["command"])
    assert service == "environment"
    env = svc["environment"]
    assert all(env.get(k) for k in ENTRYPOINT_ENV) and "MESHRL_REPLICA_ID" not in env  # scales: own ids
    assert "container_name" not in svc and "ports" not in svc
    port = grpc_port(service, flags, cfg, "environment-abc")
    assert svc["healthcheck"]["test"][:4] == ["CMD", "meshrl", "health", f"127.0.0.1:{port}"]
    assert env["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{port}"
    assert cfg.environment.address == f"environment:{port}" and not cfg.environment.launched
    assert [v for v in svc["volumes"] if ":/data" in v] == []  # no data set in reach of the tools
    assert svc["depends_on"]["nats"]["condition"] == "service_healthy"


def test_it_connects_as_its_own_nats_user(compose, services):
    _, override = compose
    svc = services["environment"]
    assert svc["secrets"] == ["nats-environment"] and "environment" in KINDS
    assert svc["environment"][ENV_VAR] == "/run/secrets/nats-environment"
    assert override["secrets"]["nats-environment"]["file"] == "./nats-auth/nats-environment.json"


def test_every_meshrl_service_reads_the_environment_config(services):
    for name in ("learner", "rollout", "reward", "reference", "environment"):
        mounts = [
            v for v in services[name]["volumes"] if v.split(":")[1] == services[name]["environment"]["MESHRL_CONFIG"]
        ]
        assert mounts == [f"./{CONFIG.name}:/etc/meshrl/config.yaml:ro"], name


def test_prometheus_scrapes_it():
    scrape = yaml.safe_load((COMPOSE_DIR / "prometheus.yml").read_text())["scrape_configs"][0]
    assert "environment" in scrape["dns_sd_configs"][0]["names"]
