"""A control call's free text cannot crash the learner.

A checkpoint's reason becomes its tag; a tag allows 1-64 letters, digits, '.', '_', '-'. A
free-text reason ("before the eval!") used to be queued, the checkpoint written, and the tag
write then raised inside the training loop: the learner died. Against the learner's real
control service (as served by the launcher: mutual TLS with the run's certificates) and a
real gateway, the call is refused with INVALID_ARGUMENT naming the rule, and nothing reaches
the loop.

Run: .venv/bin/python -m pytest tests/security/test_control_inputs.py -q
"""

import grpc
import pytest

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
from meshrl.run.presence import find_launcher
from meshrl.run.secrets import grpc_user_env
from meshrl.transport.rpc.channel import open_channel
from meshrl.transport.rpc.mesh_tls import caller_env
from tests.fixtures.gateway import gateway_for
from tests.services.gateway.test_gateway_audit_events import OPERATOR, live_run

FREE_TEXT = "before the eval!"


@pytest.mark.asyncio
async def test_a_free_text_checkpoint_tag_is_refused_not_queued(tmp_path, nats_url, run_id, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    run_dir, state, learner = await live_run(root, nats_url, run_id, monkeypatch)
    gw = await gateway_for(root, tmp_path, olga=("operator", OPERATOR))
    try:
        with caller_env(grpc_user_env(run_dir / "secrets", "admin")):
            async with open_channel(find_launcher(run_dir).learner_grpc, retries=False) as channel:
                with pytest.raises(grpc.aio.AioRpcError) as direct:
                    await learner_pb2_grpc.LearnerControlServiceStub(channel).Checkpoint(
                        learner_pb2.CheckpointRequest(tag=FREE_TEXT), timeout=10
                    )
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as via_gateway:
                await gateway_pb2_grpc.GatewayServiceStub(channel).CheckpointRun(
                    pb.RunActionRequest(run="live", reason=FREE_TEXT),
                    timeout=10,
                    metadata=(("authorization", f"Bearer {OPERATOR}"),),
                )
    finally:
        await gw.stop()
        await learner.stop(None)
    for refused in (direct.value, via_gateway.value):
        assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "tag 'before the eval!' is not allowed: use 1-64 letters, digits" in refused.details()
    assert state.checkpoint_requests.empty()  # nothing for the loop to trip on
