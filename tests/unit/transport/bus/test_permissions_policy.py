"""The generated bus users: the policy matches what the services do, the server config holds
no password, credential files are private and never show their password.

Run: .venv/bin/python -m pytest tests/unit/transport/bus/test_permissions_policy.py -q
"""

import json
import stat

import pytest

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.credentials import (
    ENV_VAR,
    Credentials,
    CredentialsError,
    credentials_from_env,
    read_credentials,
    write_credentials,
)
from meshrl.transport.bus.run_auth import create_run_auth
from meshrl.transport.bus.subjects import CONSUMES, kind_permissions, run_permissions


def test_consumed_stages_and_durables_are_the_services_own():
    from meshrl.services.reference import worker as reference
    from meshrl.services.reward import worker as reward
    from meshrl.services.rollout import worker as rollout

    assert CONSUMES["rollout"] == (rollout.IN_STAGE, rollout.DURABLE)
    assert CONSUMES["reward"] == (reward.IN_STAGE, reward.DURABLE)
    assert CONSUMES["reference"] == (reference.STAGE, reference.DURABLE)
    publishes = {kind: kind_permissions("r", kind, reference_enabled=True).publish for kind in CONSUMES}
    assert names.stage_subject("r", rollout.OUT_STAGE) in publishes["rollout"]
    assert names.stage_subject("r", reference.OUT_STAGE) in publishes["reference"]


@pytest.mark.parametrize("reference_enabled,allowed,refused", [(True, "scored", "ready"), (False, "ready", "scored")])
def test_reward_publishes_where_the_run_sends_it(reference_enabled, allowed, refused):
    from meshrl.services.reward.worker import next_stage

    assert next_stage(reference_enabled) == allowed
    publish = kind_permissions("r", "reward", reference_enabled=reference_enabled).publish
    assert names.stage_subject("r", allowed) in publish and names.stage_subject("r", refused) not in publish


def test_only_the_learner_and_admin_may_write_the_weights_notice_or_the_weights():
    bucket, objects = names.kv_bucket("r"), names.object_bucket("r")
    for user, perms in run_permissions("r").items():
        writes_kv = any(s in perms.publish for s in (f"$KV.{bucket}.>", ">"))
        writes_objects = any(s in perms.publish for s in (f"$O.{objects}.>", ">"))
        assert writes_kv == writes_objects == (user in ("learner", "admin")), user
        assert not any(s.startswith(f"$KV.{bucket}.{names.WEIGHTS_NOTICE_KEY}") for s in perms.publish)


@pytest.mark.parametrize("kind", ["reward_model", "environment"])
def test_grpc_only_kinds_consume_and_publish_no_stage(kind):
    publish = kind_permissions("r", kind).publish
    assert not [s for s in publish if "MESHRL_r_" in s or s.startswith("meshrl.r.")]  # no stage, no dead letters
    assert f"$KV.meshrl_r_state.services.{kind}.>" in publish  # its own address in the run KV
    assert not [s for s in publish if s.startswith("$KV.") and kind not in s]  # no other service's keys


def test_server_config_names_password_variables_only(tmp_path):
    auth = create_run_auth(tmp_path / "secrets", "r")
    passwords = [read_credentials(path).password for path in auth.files.values()]
    assert sorted(auth.files) == ["admin", "environment", "learner", "reference", "reward", "reward_model", "rollout"]
    assert len(set(passwords)) == 7
    assert not [p for p in passwords if p in auth.server.config or p in repr(auth)]
    assert sorted(auth.server.env.values()) == sorted(passwords)
    assert "password: $MESHRL_NATS_PASSWORD_ROLLOUT" in auth.server.config


def test_credential_files_are_private_and_readable_back(tmp_path):
    path = write_credentials(tmp_path / "secrets", Credentials("rollout", "s3cret-pw"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert credentials_from_env({ENV_VAR: str(path)}) == Credentials("rollout", "s3cret-pw")
    assert "s3cret-pw" not in repr(read_credentials(path))
    assert credentials_from_env({}) is None


def test_a_bad_credential_file_is_named_without_its_content(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"user": "rollout", "pass": "leaky-value"}))
    with pytest.raises(CredentialsError) as info:
        read_credentials(bad)
    assert str(bad) in str(info.value) and "leaky-value" not in str(info.value)
    with pytest.raises(CredentialsError, match="cannot read"):
        read_credentials(tmp_path / "missing.json")
