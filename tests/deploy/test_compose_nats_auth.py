"""compose.yaml's NATS runs with the users deploy/compose/make_nats_auth.py generates: the
script writes 0600 files with new random passwords, compose mounts each as a secret where
the nats command and each service's MESHRL_NATS_CREDENTIALS_FILE say, and a REAL nats-server
started with compose's nats command (store, ports and /run/secrets moved to a temp dir)
refuses an anonymous client and the rollout user's publish to the ready stream, while the
learner and rollout users do their jobs.

    .venv/bin/python -m pytest -q tests/deploy/test_compose_nats_auth.py
"""

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import pytest
import yaml

from meshrl.api.common.v1 import common_pb2
from meshrl.gateway.auth.tokens import load_tokens
from meshrl.transport.bus import Bus, BusUnavailable
from meshrl.transport.bus.credentials import ENV_VAR, read_credentials
from meshrl.transport.bus.errors import PermissionDenied
from meshrl.transport.bus.subjects import ADMIN, KINDS
from tests.deploy.test_compose import COMPOSE, COMPOSE_DIR
from tests.fixtures.nats import nats_on_own_ports

sys.path.insert(0, str(COMPOSE_DIR))
import make_nats_auth  # noqa: E402 - deploy/compose/make_nats_auth.py

pytestmark = pytest.mark.timeout(120)
RUN_ID = "grpo-smollm2"  # compose.yaml's MESHRL_RUN_ID default


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def auth_dir(tmp_path_factory) -> Path:
    """What make_nats_auth.py writes for compose's run config, in a temp copy of nats-auth/."""
    out = tmp_path_factory.mktemp("compose") / "nats-auth"
    assert make_nats_auth.main(["--out", str(out), "--run-id", RUN_ID]) == 0
    return out


def secret_file(compose: dict, name: str, root: Path) -> Path:
    """Where a top-level secret's file is, its ./ path moved under `root`."""
    source = compose["secrets"][name]["file"]
    assert source.startswith("./"), f"secret {name}: {source} is not beside compose.yaml"
    return root / source[2:]


def test_script_writes_private_files_with_new_passwords(auth_dir, tmp_path):
    assert oct(auth_dir.stat().st_mode & 0o777) == "0o700"
    names = {p.name for p in auth_dir.iterdir()}
    assert names == {"nats-auth.conf", *(f"nats-{u}.json" for u in (*KINDS, ADMIN))}
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in auth_dir.iterdir())
    assert make_nats_auth.main(["--out", str(tmp_path / "again"), "--run-id", RUN_ID]) == 0
    first, again = (read_credentials(d / "nats-rollout.json").password for d in (auth_dir, tmp_path / "again"))
    assert first != again and len(first) > 40
    assert first in (auth_dir / "nats-auth.conf").read_text()


def test_compose_mounts_the_generated_files_as_secrets(compose, auth_dir):
    nats = compose["services"]["nats"]
    conf = nats["command"][nats["command"].index("--config") + 1]
    assert conf == f"/run/secrets/{nats['secrets'][0]}" and nats["secrets"] == ["nats-auth"]
    assert secret_file(compose, "nats-auth", auth_dir.parent) == auth_dir / "nats-auth.conf"
    kinds = [k for k in KINDS if k in compose["services"]]
    assert {"learner", "rollout", "reward", "reference"} <= set(kinds)
    for kind in kinds:
        svc = compose["services"][kind]
        assert [n for n in svc["secrets"] if n.startswith("nats-")] == [f"nats-{kind}"], kind  # its own user, no other
        assert svc["environment"][ENV_VAR] == f"/run/secrets/nats-{kind}", kind
        assert read_credentials(secret_file(compose, f"nats-{kind}", auth_dir.parent)).user == kind
    for name, svc in compose["services"].items():  # a secret's path travels, never its value
        secrets = [
            k for k in svc.get("environment", {}) if ("PASSWORD" in k or "TOKEN" in k) and not k.endswith("_FILE")
        ]
        assert not secrets, name


def compose_nats_command(compose: dict, auth_dir: Path, store: Path) -> list[str]:
    """compose's nats command, /run/secrets/X -> the generated file, store moved (ports: nats_on_own_ports)."""
    args = list(compose["services"]["nats"]["command"])
    for i, arg in enumerate(args):
        if arg.startswith("/run/secrets/"):
            args[i] = str(secret_file(compose, arg.removeprefix("/run/secrets/"), auth_dir.parent))
    args[args.index("--store_dir") + 1] = str(store)
    return args


@contextlib.contextmanager
def compose_nats(compose: dict, auth_dir: Path, store: Path):
    with nats_on_own_ports(compose_nats_command(compose, auth_dir, store), store.parent / "nats-run") as port:
        yield f"nats://127.0.0.1:{port}"


async def connect(url: str, auth_dir: Path, user: str) -> Bus:
    return await Bus.connect(
        url, RUN_ID, name=f"t-{user}", timeout=3, credentials=read_credentials(auth_dir / f"nats-{user}.json")
    )


async def exercise(url: str, auth_dir: Path) -> None:
    with pytest.raises(BusUnavailable, match="refused a client without credentials"):
        await Bus.connect(url, RUN_ID, name="anon", timeout=2)
    async with await connect(url, auth_dir, "learner") as learner:
        await learner.ensure_streams()  # the learner creates the run's streams in compose
        async with await connect(url, auth_dir, "rollout") as rollout:
            with pytest.raises(PermissionDenied, match=r"meshrl\..*\.ready"):
                await rollout.publish("ready", common_pb2.Group(group_id="forged"), msg_id="forged")
            await rollout.publish("generated", common_pb2.Group(group_id="g1"), msg_id="g1")  # its job
        assert await learner.pending("ready") == 0


def test_real_nats_with_compose_command_enforces_the_users(compose, auth_dir, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with compose_nats(compose, auth_dir, tmp_path / "store") as url:
        asyncio.run(exercise(url, auth_dir))


def test_the_checkpoint_key_is_made_once_the_learner_signs_the_gateway_verifies(compose, auth_dir, tmp_path):
    """make_nats_auth.py makes the checkpoint key beside nats-auth/ once (again: the same key, a
    new one would orphan every checkpoint); compose mounts the private key into the learner
    alone and the public half into the gateway, each through MESHRL_CHECKPOINT_KEY_FILE."""
    keys = auth_dir.parent / "checkpoint-key"
    private, public = keys / "checkpoint-signing.key", keys / "checkpoint-verify.pub"
    before = private.read_bytes()
    assert (
        make_nats_auth.main(
            ["--out", str(auth_dir.parent / "again"), "--run-id", RUN_ID, "--checkpoint-key", str(keys)]
        )
        == 0
    )
    assert private.read_bytes() == before and b"PRIVATE KEY" in before and b"PUBLIC KEY" in public.read_bytes()
    learner, gateway = compose["services"]["learner"], compose["services"]["gateway"]
    assert "checkpoint-key" in learner["secrets"] and "checkpoint-verify" in gateway["secrets"]
    assert learner["environment"]["MESHRL_CHECKPOINT_KEY_FILE"] == "/run/secrets/checkpoint-key"
    assert gateway["environment"]["MESHRL_CHECKPOINT_KEY_FILE"] == "/run/secrets/checkpoint-verify"
    assert secret_file(compose, "checkpoint-key", auth_dir.parent) == private
    assert secret_file(compose, "checkpoint-verify", auth_dir.parent) == public
    others = [n for n, svc in compose["services"].items() if "checkpoint-key" in svc.get("secrets", [])]
    assert others == ["learner"]


@pytest.mark.skipif(os.geteuid() != 0, reason="handing files to uid 10001 needs root (the script says how otherwise)")
def test_run_as_root_the_files_containers_read_are_the_images_users_and_still_private(compose, auth_dir):
    """The image runs as uid 10001: the learner could not read a root-owned 0600 checkpoint key
    and failed its end-of-run save. Every secret file a container mounts is that uid's, 0600;
    the operator's nats-admin.json stays the caller's."""
    mounted = {name for svc in compose["services"].values() for name in svc.get("secrets", [])}
    files = {name: secret_file(compose, name, auth_dir.parent) for name in mounted}
    assert {"checkpoint-key", "checkpoint-verify", "nats-learner", "nats-auth", "gateway-tokens"} <= set(files)
    assert f"USER {make_nats_auth.IMAGE_UID}:" in (COMPOSE_DIR.parent / "image" / "Dockerfile").read_text()
    for name, path in files.items():
        assert path.stat().st_uid == make_nats_auth.IMAGE_UID, name
        if name != "checkpoint-verify":  # the public half may be read by anyone
            assert oct(path.stat().st_mode & 0o777) == "0o600", name
    assert (auth_dir / "nats-admin.json").stat().st_uid == 0


def test_the_gateway_tokens_file_is_made_once_with_an_admin_token(auth_dir, tmp_path):
    """compose mounts gateway-tokens.yaml: made when missing (a newcomer writes nothing by
    hand), kept when there is one (the operator's own tokens)."""
    path = auth_dir.parent / "gateway-tokens.yaml"
    [admin] = load_tokens(path)
    assert (admin.name, admin.role) == ("admin", "admin") and len(admin.token) >= 40
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    mine = tmp_path / "gateway-tokens.yaml"
    mine.write_text("tokens: []\n")
    assert make_nats_auth.main(["--out", str(tmp_path / "nats-auth"), "--run-id", RUN_ID]) == 0
    assert mine.read_text() == "tokens: []\n"
