"""deploy/compose/tls.yaml (an override of compose.yaml) is valid against the Compose spec, gives
every meshrl service exactly the MESHRL_NATS_TLS_* / MESHRL_GRPC_TLS_* variables the code reads,
each file inside the folder make_secrets.py --files writes for that service and mounted
where the variable says; and NATS started with the override's command (its store and file
paths moved into a temp dir) takes a service's certificate and refuses a client without one.

    .venv/bin/python -m pytest -q tests/deploy/test_compose_tls.py
"""

import asyncio
from pathlib import Path

import pytest
import yaml

from tests.deploy.test_compose import COMPOSE, COMPOSE_DIR, check_jsonschema
from tests.deploy.test_compose_nats_auth import auth_dir, secret_file  # noqa: E402,F401 - a fixture: compose's NATS users
from tests.deploy.test_k8s import K8S  # noqa: F401 - puts components/tls on sys.path
from tests.deploy.test_k8s_tls import CODE_ENVS, FILE_ENVS
from tests.fixtures.nats import nats_on_own_ports

# isort: split
import make_secrets  # noqa: E402 - deploy/k8s/components/tls/make_secrets.py (test_k8s put it on sys.path)

OVERRIDE = COMPOSE_DIR / "tls.yaml"
MESHRL = ("learner", "rollout", "reward", "reference")
# The services of environment.yaml and reward-model.yaml get theirs from an override each.
EXTRA = {name: COMPOSE_DIR / f"tls-{name}.yaml" for name in ("environment", "reward-model")}


@pytest.fixture(scope="module")
def override() -> dict:
    return yaml.safe_load(OVERRIDE.read_text())


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """What make_secrets.py --files writes, in a temp copy of deploy/compose/tls."""
    root = tmp_path_factory.mktemp("compose") / "tls"
    assert make_secrets.main(["--namespace", "compose", "--files", str(root)]) == 0
    return root


def mounts(service: dict, compose_root: Path) -> dict[str, Path]:
    """{container path: host path} of a service's bind mounts, the host side under compose_root."""
    out = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("./"):
            out[target] = compose_root / source[2:]
    return out


@pytest.mark.parametrize("path", [OVERRIDE, *EXTRA.values()], ids=lambda p: p.name)
def test_override_is_valid_against_the_compose_spec(path):
    done = check_jsonschema(path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_service_reads_its_own_certificate_files(override, files):
    assert set(override["services"]) == {"nats", *MESHRL} and set(MESHRL) <= set(
        yaml.safe_load(COMPOSE.read_text())["services"]
    )
    extra = {name: yaml.safe_load(path.read_text())["services"] for name, path in EXTRA.items()}
    assert all(set(services) == {name} for name, services in extra.items())
    for name in (*MESHRL, *EXTRA):
        service = override["services"][name] if name in MESHRL else extra[name][name]
        env = service["environment"]
        assert {k for k in env if k.startswith(("MESHRL_NATS_TLS_", "MESHRL_GRPC_TLS_"))} == CODE_ENVS, name
        bound = mounts(service, files.parent)
        for var in FILE_ENVS:
            path = Path(env[var])
            host = bound[str(path.parent)]
            assert host == files / f"meshrl-tls-{name}" and (host / path.name).is_file(), f"{name}: {var}"
        assert (env["MESHRL_GRPC_TLS_CLIENT_AUTH"], env["MESHRL_GRPC_TLS_SERVER_NAME"]) == ("1", make_secrets.MESH_NAME)
    assert oct((files / "meshrl-tls-rollout").stat().st_mode & 0o777) == "0o700"


def nats_command(override: dict, files: Path, auth_dir: Path, store: Path) -> list[str]:
    """The override's NATS command, its /tls, /run/secrets and /data moved to the test's
    folders (ports: nats_on_own_ports)."""
    nats = override["services"]["nats"]
    tls_dir = mounts(nats, files.parent)["/tls"]
    base = yaml.safe_load(COMPOSE.read_text())
    args = [
        str(secret_file(base, a.removeprefix("/run/secrets/"), auth_dir.parent))
        if a.startswith("/run/secrets/")
        else a.replace("/tls/", f"{tls_dir}/")
        for a in nats["command"]
    ]
    args[args.index("--store_dir") + 1] = str(store)
    return args


def test_nats_with_the_override_command_requires_client_certificates(override, files, auth_dir, tmp_path):
    from meshrl.transport.bus import Bus, BusUnavailable
    from meshrl.transport.bus.credentials import read_credentials
    from meshrl.transport.bus.tls import TlsFiles

    client = files / "meshrl-tls-rollout"

    async def connect(tls):  # the server is ready: nats_on_own_ports waited for its own word
        try:
            async with await Bus.connect(
                f"nats://localhost:{port}",
                "r",
                name="t",
                timeout=3,
                tls=tls,
                credentials=read_credentials(auth_dir / "nats-rollout.json"),
            ):
                return "connected"
        except BusUnavailable:
            return "refused"

    mutual = TlsFiles(str(client / "ca.crt"), str(client / "tls.crt"), str(client / "tls.key"))
    with nats_on_own_ports(nats_command(override, files, auth_dir, tmp_path / "store"), tmp_path / "nats-run") as port:
        assert asyncio.run(connect(mutual)) == "connected"
        assert asyncio.run(connect(TlsFiles(str(client / "ca.crt")))) == "refused"
