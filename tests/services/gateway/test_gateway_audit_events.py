"""Control actions through the gateway reach the run's events subject as well as audit.jsonl:
a live run (its launcher.json names this process, a real NATS and a real learner control
server with the learner's own LearnerControl, serving mutual TLS with the run's
launch.grpc_tls certificates, which the gateway finds in RUN_DIR/secrets) is paused and
scaled over the gateway's gRPC;
each action's row, who (the token's holder), when and what, is in RUN_DIR/audit.jsonl and,
identical, on `meshrl.<run>.events` with header Meshrl-Event: audit.

    .venv/bin/python -m pytest -q tests/services/gateway/test_gateway_audit_events.py
"""

import contextlib
import json
import os

import grpc
import pytest

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
from meshrl.gateway.auth.tokens import TokenAuth, load_tokens
from meshrl.gateway.serve import start_gateway
from meshrl.launch.secrets import create_grpc_tls
from meshrl.run.audit import control_auditor
from meshrl.run.presence import LauncherInfo, find_launcher, launch_lock, write_presence
from meshrl.run.secrets import grpc_user_env
from meshrl.services.learner.control import LearnerControl, LearnerState
from meshrl.transport.bus import Bus
from meshrl.transport.bus.subjects import events_subject
from meshrl.transport.rpc.channel import is_serving, open_channel
from meshrl.transport.rpc.mesh_tls import CA_ENV, CERT_ENV, CLIENT_AUTH_ENV, KEY_ENV, caller_env
from meshrl.transport.rpc.server import registration, start_server

OPERATOR = "operator-token-audit-0123456789"
HELD_LOCKS = contextlib.ExitStack()  # the live runs' launch locks, held for the session


async def live_run(root, nats_url, run_id, monkeypatch, audit_js=None):
    """RUN_DIR 'live' whose launcher is this process; its learner control server, started with
    mutual gRPC TLS from the certificates launch.grpc_tls makes in RUN_DIR/secrets (auditing
    direct calls as the learner does when `audit_js` is given)."""
    run_dir = root / "live"
    run_dir.mkdir()
    create_grpc_tls(run_dir / "secrets")
    for name, value in {**grpc_user_env(run_dir / "secrets", "learner"), CLIENT_AUTH_ENV: "1"}.items():
        monkeypatch.setenv(name, value)  # the learner's env, as the launcher gives it
    state = LearnerState(run_id=run_id, total_steps=10)
    audit = control_auditor(run_dir, audit_js, run_id) if audit_js is not None else None
    server, port = await start_server(
        [
            registration(
                learner_pb2_grpc.add_LearnerControlServiceServicer_to_server,
                LearnerControl(state, audit=audit),
                learner_pb2.DESCRIPTOR.services_by_name["LearnerControlService"],
            )
        ]
    )
    for name in (CA_ENV, CERT_ENV, KEY_ENV, CLIENT_AUTH_ENV):
        monkeypatch.delenv(name)  # the gateway's own environment has no TLS: it finds the run's
    assert not await is_serving(f"127.0.0.1:{port}")  # TLS only
    (run_dir / "config.yaml").write_text("run: {name: live}\n")
    write_presence(run_dir, LauncherInfo(os.getpid(), run_id, nats_url, f"127.0.0.1:{port}", {"rollout": 1}))
    HELD_LOCKS.enter_context(launch_lock(run_dir))  # as a launcher holds it: this process is the run's launcher
    return run_dir, state, server


@pytest.mark.asyncio
async def test_pause_and_scale_through_the_gateway_are_audited_in_the_file_and_on_the_events_subject(
    tmp_path, nats_url, run_id, monkeypatch
):
    root = tmp_path / "runs"
    root.mkdir()
    run_dir, state, learner = await live_run(root, nats_url, run_id, monkeypatch)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"tokens:\n  - {{name: olga, role: operator, token: {OPERATOR}}}\n")
    gw = await start_gateway(root, TokenAuth(load_tokens(tokens)))
    auth = (("authorization", f"Bearer {OPERATOR}"),)
    async with await Bus.connect(nats_url, run_id, name="test") as bus:
        await bus.ensure_streams()  # the launcher makes them before anything runs
        sub = await bus.nc.subscribe(events_subject(run_id))
        await bus.nc.flush()
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}") as channel:
            stub = gateway_pb2_grpc.GatewayServiceStub(channel)
            await stub.PauseRun(pb.RunActionRequest(run="live", reason="look at the KL"), metadata=auth)
            await stub.ScaleService(pb.ScaleServiceRequest(run="live", service="rollout", replicas=2), metadata=auth)
        events = [await sub.next_msg(timeout=10) for _ in range(2)]
    await gw.stop()
    await learner.stop(None)
    rows = [json.loads(x) for x in (run_dir / "audit.jsonl").read_text().splitlines()]
    assert [(r["who"], r["role"], r["via"], r["action"]) for r in rows] == [
        ("olga", "operator", "gateway", "pause"),
        ("olga", "operator", "gateway", "scale"),
    ]
    assert rows[0]["reason"] == "look at the KL" and rows[1]["changes"] == {"rollout": {"from": 1, "to": 2}}
    assert [json.loads(m.data) for m in events] == rows
    assert [m.headers["Meshrl-Event"] for m in events] == ["audit", "audit"]
    assert state.message == "paused: look at the KL"  # the real control service acted


@pytest.mark.asyncio
async def test_the_learner_audits_every_control_call_and_the_gateway_adds_its_user(
    tmp_path, nats_url, run_id, monkeypatch
):
    """The learner audits a pause made straight to its control port (who = the client
    certificate's name) and the gateway's resume too (who = the gateway's certificate, with
    the gateway's user as on_behalf_of); the gateway writes its own row with its token's name."""
    root = tmp_path / "runs"
    root.mkdir()
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"tokens:\n  - {{name: olga, role: operator, token: {OPERATOR}}}\n")
    async with await Bus.connect(nats_url, run_id, name="test") as bus:
        await bus.ensure_streams()
        run_dir, state, learner = await live_run(root, nats_url, run_id, monkeypatch, audit_js=bus.js)
        sub = await bus.nc.subscribe(events_subject(run_id))
        await bus.nc.flush()
        gw = await start_gateway(root, TokenAuth(load_tokens(tokens)))
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}") as channel:
            await gateway_pb2_grpc.GatewayServiceStub(channel).ResumeRun(
                pb.RunActionRequest(run="live"), metadata=(("authorization", f"Bearer {OPERATOR}"),)
            )
        with caller_env(grpc_user_env(run_dir / "secrets", "admin")):  # an operator's own client
            async with open_channel(find_launcher(run_dir).learner_grpc, retries=False) as channel:
                await learner_pb2_grpc.LearnerControlServiceStub(channel).Pause(
                    learner_pb2.PauseRequest(reason="by hand"), timeout=10
                )
        events = [json.loads((await sub.next_msg(timeout=10)).data) for _ in range(3)]
        await gw.stop()
        await learner.stop(None)
    rows = [json.loads(x) for x in (run_dir / "audit.jsonl").read_text().splitlines()]
    assert [(r["who"], r["via"], r["action"], r.get("on_behalf_of")) for r in rows] == [
        ("cert:meshrl-admin", "learner-control", "resume", "olga"),
        ("olga", "gateway", "resume", None),
        ("cert:meshrl-admin", "learner-control", "pause", None),
    ]
    assert rows[2]["reason"] == "by hand" and rows[2]["run_id"] == run_id and events == rows
    assert state.message == "paused: by hand"
