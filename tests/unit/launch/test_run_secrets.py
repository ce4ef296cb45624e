"""run_local with an embedded NATS: every service connects as its own kind's user through a
0600 credential file named by MESHRL_NATS_CREDENTIALS_FILE; only the learner may write the
weights notice; no password is in argv, the environment, config.yaml, a log or any other
file of the run dir, and the secrets are gone once the run ends."""

import json
import sys
import textwrap
from pathlib import Path

from meshrl.launch.local import run_local
from meshrl.transport.bus.credentials import ENV_VAR
from tests.unit.launch.stand_in import ENDING, stand_in_config

PY = sys.executable
# Each stand-in: connect with the credentials the launcher gave it, try to write the weights
# notice, record what happened (the password too: the test looks for it in the run dir).
STAND_IN = (
    textwrap.dedent("""
    import asyncio, json, os, sys, time
    from meshrl.transport.bus import Bus, subjects
    from meshrl.transport.bus.errors import PermissionDenied

    url, run_id, kind, records = sys.argv[1:5]
    path = os.environ["MESHRL_NATS_CREDENTIALS_FILE"]

    async def try_notice():
        async with await Bus.connect(url, run_id, name=kind) as bus:
            try:
                await bus.state.put(subjects.WEIGHTS_NOTICE_KEY, b"v1")
                return "written"
            except PermissionDenied:
                return "refused"

    record = {"kind": kind, "notice": asyncio.run(try_notice()), "mode": os.stat(path).st_mode & 0o777,
              "creds": json.load(open(path)), "argv": sys.argv, "env": dict(os.environ)}
    run_dir = os.path.dirname(sys.argv[5])
""")
    + ENDING
)


def make_cfg():
    return stand_in_config(1)


def run_with_stand_ins(tmp_path: Path) -> list[dict]:
    records = tmp_path / "records.jsonl"

    def argv_for(spec, url, run_id, config_path):
        return [PY, "-c", STAND_IN, url, run_id, spec.name, str(records), str(config_path)]

    run_local(make_cfg(), tmp_path / "run", progress=False, argv_for=argv_for)
    return [json.loads(line) for line in records.read_text().splitlines()]


def files_containing(root: Path, secret: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_each_service_gets_its_own_user_by_file_and_no_secret_lands_in_the_run_dir(tmp_path):
    records = {r["kind"]: r for r in run_with_stand_ins(tmp_path)}
    assert sorted(records) == ["learner", "reference", "reward", "rollout"]
    run_dir = tmp_path / "run"
    for kind, record in records.items():
        assert record["creds"]["user"] == kind and record["mode"] == 0o600
        assert record["notice"] == ("written" if kind == "learner" else "refused")
        password = record["creds"]["password"]
        assert len(password) > 40
        assert record["env"][ENV_VAR] == str(run_dir / "secrets" / f"nats-{kind}.json")
        assert not [k for k, v in record["env"].items() if password in v]
        assert not [a for a in record["argv"] if password in a]
        assert files_containing(run_dir, password) == []  # config.yaml, logs, nats conf and log
    assert not (run_dir / "secrets").exists()
    conf = (run_dir / "nats" / "nats-server.conf").read_text()
    assert "password: $MESHRL_NATS_PASSWORD_ROLLOUT" in conf
