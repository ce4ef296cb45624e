"""run_local with `nats.tls: mutual`: the embedded nats-server requires TLS and client
certificates; every service gets the run CA and its own user's certificate and key (0600)
through MESHRL_NATS_TLS_*, connects with them, and a client without a certificate is refused.
Stand-in services (no vLLM); the real launcher and a real nats-server.

    .venv/bin/python -m pytest -q tests/unit/launch/test_run_nats_tls.py
"""

import json
import sys
import textwrap

from meshrl.launch.local import run_local
from meshrl.transport.bus.tls import CA_ENV, CERT_ENV, KEY_ENV
from tests.unit.launch.stand_in import ENDING, stand_in_config

PY = sys.executable
STAND_IN = (
    textwrap.dedent("""
    import asyncio, json, os, sys, time
    from meshrl.transport.bus import Bus, BusUnavailable
    from meshrl.transport.bus.tls import TlsFiles
    from meshrl.run.secrets import user_tls_env

    url, run_id, kind, records = sys.argv[1:5]

    async def connect(tls=None):
        try:
            async with await Bus.connect(url, run_id, name=kind, timeout=3, tls=tls) as bus:
                return bool(bus.nc._server_info.get("tls_required"))
        except BusUnavailable:
            return "refused"

    env = {k: v for k, v in os.environ.items() if k.startswith("MESHRL_NATS_TLS_")}
    record = {"kind": kind, "env": env, "tls": asyncio.run(connect()),
              "no_cert": asyncio.run(connect(TlsFiles(env["MESHRL_NATS_TLS_CA_FILE"]))),
              "key_mode": os.stat(env["MESHRL_NATS_TLS_KEY_FILE"]).st_mode & 0o777,
              # what `meshrl status` finds for a user from the run's secrets dir
              "found": user_tls_env(os.path.dirname(env["MESHRL_NATS_TLS_CA_FILE"]), kind)}
    run_dir = os.path.dirname(sys.argv[5])
""")
    + ENDING
)


def test_embedded_nats_is_mutual_tls_and_each_service_has_its_own_certificate(tmp_path):
    cfg = stand_in_config(1, nats={"tls": "mutual"})
    records_path = tmp_path / "records.jsonl"

    def argv_for(spec, url, run_id, config_path):
        return [PY, "-c", STAND_IN, url, run_id, spec.name, str(records_path), str(config_path)]

    run_local(cfg, tmp_path / "run", progress=False, argv_for=argv_for)
    records = {r["kind"]: r for r in map(json.loads, records_path.read_text().splitlines())}
    secrets = tmp_path / "run" / "secrets"
    assert sorted(records) == ["learner", "reference", "reward", "rollout"]
    for kind, record in records.items():
        assert record["env"] == {
            CA_ENV: str(secrets / "nats-ca.pem"),
            CERT_ENV: str(secrets / f"nats-{kind}-tls.pem"),
            KEY_ENV: str(secrets / f"nats-{kind}-tls.key"),
        }
        assert (record["tls"], record["no_cert"], record["key_mode"]) == (True, "refused", 0o600)
        assert record["found"] == record["env"]
    assert "verify: true" in (tmp_path / "run" / "nats" / "nats-server.conf").read_text()
    assert not secrets.exists()
