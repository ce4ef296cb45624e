"""run_local with `launch.grpc_tls` as a config leaves it (mutual: secure by default on one
machine; `off` was the default and served plaintext to any local user): the launcher makes a
run CA and a certificate per service kind in RUN_DIR/secrets, gives each child MESHRL_GRPC_TLS_* (client auth required),
and a real gRPC server started in a child with that env serves mutual TLS only: a call with
the admin's files (what `meshrl status` finds) is SERVING, a plaintext call and a TLS call
without a certificate are refused. Stand-in services (no vLLM); the real launcher and NATS.

    .venv/bin/python -m pytest -q tests/unit/launch/test_run_grpc_tls.py
"""

import json
import sys
import textwrap

from meshrl.launch.local import run_local
from meshrl.transport.rpc.mesh_tls import CA_ENV, CERT_ENV, CLIENT_AUTH_ENV, KEY_ENV
from tests.unit.launch.stand_in import ENDING, stand_in_config

PY = sys.executable
STAND_IN = (
    textwrap.dedent("""
    import asyncio, json, os, sys
    from meshrl.run.secrets import grpc_user_env
    from meshrl.transport.rpc.channel import is_serving
    from meshrl.transport.rpc.server import start_server

    kind, records, config_path = sys.argv[1:4]
    env = {k: v for k, v in os.environ.items() if k.startswith("MESHRL_GRPC_TLS_")}
    secrets = os.path.dirname(env["MESHRL_GRPC_TLS_CA_FILE"])
    record = {"kind": kind, "env": env, "key_mode": os.stat(env["MESHRL_GRPC_TLS_KEY_FILE"]).st_mode & 0o777}

    async def probe(address, **client_env):
        os.environ.update(client_env)
        for name in ("MESHRL_GRPC_TLS_CA_FILE", "MESHRL_GRPC_TLS_CERT_FILE", "MESHRL_GRPC_TLS_KEY_FILE"):
            if name not in client_env:
                os.environ.pop(name, None)
        return await is_serving(address, timeout=3)

    async def learner():
        server, port = await start_server([])  # the env set by the launcher: mutual TLS
        address = f"127.0.0.1:{port}"
        admin = grpc_user_env(secrets, "admin")
        record["admin"] = await probe(address, **admin)
        record["plaintext"] = await probe(address)
        record["no_cert"] = await probe(address, MESHRL_GRPC_TLS_CA_FILE=admin["MESHRL_GRPC_TLS_CA_FILE"])
        await server.stop(None)

    if kind == "learner":
        asyncio.run(learner())
    run_dir = os.path.dirname(config_path)
""")
    + ENDING
)


def test_launcher_gives_each_service_its_grpc_certificate_and_servers_require_mutual_tls(tmp_path):
    cfg = stand_in_config(1)  # no launch section
    records_path = tmp_path / "records.jsonl"

    def argv_for(spec, url, run_id, config_path):
        return [PY, "-c", STAND_IN, spec.name, str(records_path), str(config_path)]

    run_local(cfg, tmp_path / "run", progress=False, argv_for=argv_for)
    records = {r["kind"]: r for r in map(json.loads, records_path.read_text().splitlines())}
    secrets = tmp_path / "run" / "secrets"
    for kind, record in records.items():
        assert record["env"] == {
            CA_ENV: str(secrets / "grpc-ca.pem"),
            CERT_ENV: str(secrets / f"grpc-{kind}-tls.pem"),
            KEY_ENV: str(secrets / f"grpc-{kind}-tls.key"),
            CLIENT_AUTH_ENV: "1",
        }
        assert record["key_mode"] == 0o600
    assert sorted(records) == ["learner", "reference", "reward", "rollout"]
    learner = records["learner"]
    assert (learner["admin"], learner["plaintext"], learner["no_cert"]) == (True, False, False)
    assert not list(secrets.glob("grpc-*"))  # removed with the run
