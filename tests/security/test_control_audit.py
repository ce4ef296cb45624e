"""A control call that claims to be audited elsewhere is audited anyway.

The learner used to skip its audit row when the caller sent `meshrl-audited-by: gateway`
metadata: anyone able to call its control port paused or checkpointed the run without a
trace. Here, against the learner's real control service (LearnerControl with the run's
auditor, served with the run's mutual-TLS certificates as the launcher starts it), a direct
Pause carrying that header, and a claim to act for someone else, each leave a row naming
the certificate that called, in audit.jsonl and on the run's events subject.

Run: .venv/bin/python -m pytest tests/security/test_control_audit.py -q
"""

import json

import pytest

from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
from meshrl.run.presence import find_launcher
from meshrl.run.secrets import grpc_user_env
from meshrl.transport.bus import Bus
from meshrl.transport.bus.subjects import events_subject
from meshrl.transport.rpc.channel import open_channel
from meshrl.transport.rpc.mesh_tls import caller_env
from tests.services.gateway.test_gateway_audit_events import live_run

SKIP_HEADERS = (("meshrl-audited-by", "gateway"), ("meshrl-on-behalf-of", "nobody"))


@pytest.mark.asyncio
async def test_a_pause_that_says_it_was_audited_elsewhere_is_audited(tmp_path, nats_url, run_id, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    async with await Bus.connect(nats_url, run_id, name="test") as bus:
        await bus.ensure_streams()
        run_dir, state, learner = await live_run(root, nats_url, run_id, monkeypatch, audit_js=bus.js)
        sub = await bus.nc.subscribe(events_subject(run_id))
        await bus.nc.flush()
        # the admin certificate (this host's operator tools; other kinds may not pause: test_grpc_authz)
        # calling straight, not through the gateway that the header names
        with caller_env(grpc_user_env(run_dir / "secrets", "admin")):
            async with open_channel(find_launcher(run_dir).learner_grpc, retries=False) as channel:
                await learner_pb2_grpc.LearnerControlServiceStub(channel).Pause(
                    learner_pb2.PauseRequest(reason="unseen"), timeout=10, metadata=SKIP_HEADERS
                )
        event = json.loads((await sub.next_msg(timeout=10)).data)
        await learner.stop(None)
    assert state.message == "paused: unseen"  # the call itself went through
    rows = [json.loads(x) for x in (run_dir / "audit.jsonl").read_text().splitlines()]
    assert [(r["who"], r["action"], r["reason"], r["on_behalf_of"]) for r in rows] == [
        ("cert:meshrl-admin", "pause", "unseen", "nobody")
    ]
    assert event == rows[0]
