"""deploy/compose/compose.yaml is valid against the Compose spec (check-jsonschema's vendored
schema, offline), rollout and reward scale (`--scale rollout=N`), and every meshrl service's
command, environment, config mount and health check agree with the real CLI and run config.

    .venv/bin/python -m pytest -q tests/deploy/test_compose.py
check-jsonschema comes from the test extra (pyproject.toml).
"""

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from meshrl.cli.serve import SERVICES
from meshrl.config import load_config
from tests.deploy.contract import ENTRYPOINT_ENV, grpc_port, serve_argv

COMPOSE_DIR = Path(__file__).resolve().parents[2] / "deploy" / "compose"
COMPOSE = COMPOSE_DIR / "compose.yaml"
IN_OVERRIDES = {"reward_model", "environment"}  # reward-model.yaml, environment.yaml add them (test_compose_*.py)


def check_jsonschema(path: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent)) or shutil.which("check-jsonschema")
    assert tool, "check-jsonschema is missing: `bash scripts/setup.sh` installs it (test extra)"
    return subprocess.run(
        [tool, "--builtin-schema", "vendor.compose-spec", str(path)], capture_output=True, text=True, timeout=120
    )


def merged_service(base: dict, override: dict) -> dict:
    """One service of `-f compose.yaml -f OVERRIDE.yaml`: maps merge, volumes by mount path."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if key == "volumes":
            by_target = {v.split(":")[1]: v for v in out.get("volumes", [])}
            by_target.update({v.split(":")[1]: v for v in value})
            out["volumes"] = list(by_target.values())
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def load_override(path: Path) -> tuple[dict, dict]:
    """(compose.yaml, the override file) as PyYAML reads them."""
    return yaml.safe_load(COMPOSE.read_text()), yaml.safe_load(path.read_text())


def override_services(base: dict, override: dict) -> dict:
    """Every service the override names, merged over compose.yaml's."""
    return {name: merged_service(base["services"].get(name, {}), svc) for name, svc in override["services"].items()}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())  # PyYAML resolves the `<<: *meshrl` merges


def test_valid_against_the_compose_spec():
    done = check_jsonschema(COMPOSE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_validator_rejects_a_broken_file(tmp_path):
    broken = tmp_path / "compose.yaml"
    broken.write_text(COMPOSE.read_text().replace("stop_grace_period: 330s", "stop_grace_periods: 330s"))
    assert check_jsonschema(broken).returncode != 0


def test_every_meshrl_service_is_there_and_rollout_reward_scale(compose):
    services = compose["services"]
    assert set(SERVICES) - IN_OVERRIDES <= set(services)
    for name in ("rollout", "reward"):
        assert "container_name" not in services[name] and "ports" not in services[name], name
        assert "MESHRL_REPLICA_ID" not in services[name]["environment"], f"{name}: replicas need own ids"


def test_commands_env_config_and_health_checks_match_the_cli(compose):
    cfg = load_config(COMPOSE_DIR / "run-config.yaml")
    for name in set(SERVICES) - IN_OVERRIDES:
        svc = compose["services"][name]
        service, flags = serve_argv(svc["command"])
        assert service == name
        env = svc["environment"]
        assert all(env.get(k) for k in ENTRYPOINT_ENV), f"{name}: {env}"
        assert env["MESHRL_NATS_URL"] == cfg.nats.url
        assert f"./run-config.yaml:{env['MESHRL_CONFIG']}:ro" in svc["volumes"]
        port = grpc_port(service, flags, cfg, env.get("MESHRL_REPLICA_ID", "rollout-abc"))
        assert port > 0, f"{name}: a fixed gRPC port is needed for its health check"
        assert svc["healthcheck"]["test"][:4] == ["CMD", "meshrl", "health", f"127.0.0.1:{port}"], name
        assert env["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{port}", name
        assert svc["depends_on"]["nats"]["condition"] == "service_healthy"
    # the learner calls the reference by this address
    assert cfg.reference.resolved_address == f"reference:{cfg.reference.grpc_port}"


def test_nats_keeps_jetstream_on_a_volume(compose):
    nats = compose["services"]["nats"]
    command = nats["command"]
    assert "--jetstream" in command
    store = command[command.index("--store_dir") + 1]
    assert f"nats-data:{store}" in nats["volumes"] and "nats-data" in compose["volumes"]


def test_observability_profile_scrapes_every_service_on_the_metrics_port(compose):
    cfg = load_config(COMPOSE_DIR / "run-config.yaml")
    for name in ("prometheus", "grafana"):
        assert compose["services"][name]["profiles"] == ["observability"]
    scrape = yaml.safe_load((COMPOSE_DIR / "prometheus.yml").read_text())["scrape_configs"][0]
    sd = scrape["dns_sd_configs"][0]
    assert sorted(sd["names"]) == sorted(s.replace("_", "-") for s in SERVICES)  # DNS names: reward-model
    assert sd["port"] == cfg.telemetry.metrics_port
    datasource = yaml.safe_load((COMPOSE_DIR / "grafana" / "datasources.yaml").read_text())["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090"


def test_the_contract_check_catches_a_wrong_service_or_flag():
    with pytest.raises(AssertionError, match="not a service"):
        serve_argv(["rollouts"])
    with pytest.raises(AssertionError, match="does not take"):
        serve_argv(["reference", "--grpc-port", "50053"])  # reference takes its port from the config


def test_gateway_command_tokens_and_health_match_the_cli(compose):
    from meshrl.cli.gateway import ENV_VAR
    from meshrl.cli.main import parse

    gateway = compose["services"]["gateway"]
    assert gateway["command"][0] == "meshrl", "not a service: the entrypoint runs it as given"
    args = parse(gateway["command"][1:])  # the real `meshrl` parser: a wrong flag exits here
    assert (args.command, args.gateway_command, args.host) == ("gateway", "serve", "0.0.0.0")
    cfg = load_config(COMPOSE_DIR / "run-config.yaml")
    assert Path(cfg.run.dir).parent == args.runs_root, "the gateway must see the run dirs the learner writes"
    assert f"runs:{args.runs_root}" in gateway["volumes"], "read-write: it appends audit rows"
    assert gateway["ports"] == [f"127.0.0.1:{args.port}:{args.port}", f"127.0.0.1:{args.grpc_port}:{args.grpc_port}"]
    tokens = gateway["environment"][ENV_VAR]
    assert tokens == f"/run/secrets/{gateway['secrets'][0]}" and compose["secrets"][gateway["secrets"][0]]["file"]
    assert gateway["healthcheck"]["test"][:4] == ["CMD", "meshrl", "health", f"127.0.0.1:{args.grpc_port}"]
    assert gateway["environment"]["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{args.grpc_port}"


def test_nothing_is_published_beyond_this_host(compose):
    """NATS (logins in clear without tls.yaml), Prometheus (no auth) and Grafana (anonymous
    viewers) on 127.0.0.1 only; tests/deploy/test_compose_up.py checks podman's real bindings."""
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"


def test_only_the_learner_and_gateway_hold_the_run_dir(compose):
    for name, service in compose["services"].items():
        runs = [v for v in service.get("volumes", []) if str(v).endswith(":/runs")]
        if name in ("learner", "gateway"):
            assert runs == ["runs:/runs"], name
        elif name in ("rollout", "reward", "reference"):
            assert runs == [f"{name}-runs:/runs"], f"{name}: its own volume for its traces, not the run dir"
            assert service["read_only"] is True and service["tmpfs"] == ["/tmp"]


def test_up_build_takes_the_base_build_sh_made_where_docker_hub_is_out_of_reach(compose):
    """`MESHRL_BASE=localhost/meshrl-base:bookworm ... up --build`: every image built from the
    Dockerfile gets the base as its BASE build argument (default: the Dockerfile's own)."""
    dockerfile_default = next(
        line.split("=", 1)[1]
        for line in (COMPOSE_DIR.parents[1] / "deploy" / "image" / "Dockerfile").read_text().splitlines()
        if line.startswith("ARG BASE=")
    )
    builds = [svc["build"] for svc in compose["services"].values() if "build" in svc]
    assert builds and all(b["args"]["BASE"] == f"${{MESHRL_BASE:-{dockerfile_default}}}" for b in builds)
