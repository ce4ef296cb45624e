"""Mesh gRPC: each method answers only the service kinds that call it.

The run's certificates (the launcher's: one run CA, a certificate per kind, meshrl-<kind>)
and real servers under mutual TLS, as `launch.grpc_tls: mutual` (the default) serves them:
the learner's control service (LearnerControl) and the reward service (RewardServicer on a
rule component). With any run certificate good for everything, a compromised rollout paused
and checkpointed the learner and used every service. Here:
- rollout and reward certificates calling Pause are refused (PERMISSION_DENIED, the method,
  the caller's kind and the kinds allowed named) and the run is not paused; admin's works;
- the rollout calling the reward service's Score is refused, the learner's (eval) is served;
- health answers any run certificate; a client without one does not get past TLS.

Run: .venv/bin/python -m pytest tests/security/test_grpc_authz.py -q
"""

from __future__ import annotations

import contextlib
import os
from unittest import mock

import grpc
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config.schema import RewardComponentConfig
from meshrl.launch.secrets import create_grpc_tls
from meshrl.run.secrets import grpc_user_env
from meshrl.services.learner.control import LearnerControl, LearnerState
from meshrl.services.reward.components import build_components
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.server import start_reward_server
from meshrl.transport.rpc.channel import open_channel
from meshrl.transport.rpc.mesh_tls import CLIENT_AUTH_ENV, caller_env
from meshrl.transport.rpc.server import registration, start_server, stop_server

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def mesh(tmp_path_factory):
    """(secrets dir, learner control address, its state, reward address): servers started with
    their kind's certificate and client certificates required, as the launcher starts them."""
    secrets = tmp_path_factory.mktemp("run") / "secrets"
    create_grpc_tls(secrets)
    state = LearnerState(run_id="r", total_steps=10)
    with server_env(secrets, "learner"):
        learner, learner_port = await start_server(
            [
                registration(
                    learner_pb2_grpc.add_LearnerControlServiceServicer_to_server,
                    LearnerControl(state),
                    learner_pb2.DESCRIPTOR.services_by_name["LearnerControlService"],
                )
            ],
            host="127.0.0.1",
        )
    scorer = GroupScorer(build_components([RewardComponentConfig(name="exact", kind="exact_match")], "r"), {})
    with server_env(secrets, "reward"):
        reward, reward_port = await start_reward_server(scorer, host="127.0.0.1")
    yield secrets, f"127.0.0.1:{learner_port}", state, f"127.0.0.1:{reward_port}"
    for server in (learner, reward):
        await stop_server(server, 0)


@contextlib.contextmanager
def server_env(secrets, kind: str):
    """os.environ holds `kind`'s MESHRL_GRPC_TLS_* (client auth required) inside the block, as
    the launcher gives a `kind` service its environment."""
    with mock.patch.dict(os.environ, {**grpc_user_env(secrets, kind), CLIENT_AUTH_ENV: "1"}):
        yield


async def pause_as(secrets, address: str, kind: str):
    with caller_env(grpc_user_env(secrets, kind)):
        async with open_channel(address, retries=False) as channel:
            return await learner_pb2_grpc.LearnerControlServiceStub(channel).Pause(
                learner_pb2.PauseRequest(reason=f"by {kind}"), timeout=10
            )


@pytest.mark.parametrize("kind", ["rollout", "reward", "reference", "environment"])
async def test_a_service_kind_cannot_pause_the_learner(mesh, kind):
    secrets, learner, state, _ = mesh
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await pause_as(secrets, learner, kind)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refused.value.details() == (
        f"/meshrl.learner.v1.LearnerControlService/Pause on the learner is not for {kind} (allowed: admin)"
    )
    assert state.resumed.is_set() and "paused" not in state.message


async def test_the_operator_can_pause_the_learner(mesh):
    secrets, learner, state, _ = mesh
    await pause_as(secrets, learner, "admin")
    assert state.message == "paused: by admin"
    state.resume()


async def test_score_answers_the_learner_not_the_rollout(mesh):
    secrets, _, _, reward = mesh
    request = reward_pb2.ScoreRequest(
        component="exact", items=[reward_pb2.ScoreItem(id="a", response="7", ground_truth_json='"7"')]
    )
    for kind, allowed in (("rollout", False), ("learner", True)):
        with caller_env(grpc_user_env(secrets, kind)):
            async with open_channel(reward, retries=False) as channel:
                call = reward_pb2_grpc.RewardServiceStub(channel).Score(request, timeout=30)
                if allowed:
                    assert [r.score for r in (await call).results] == [1.0]
                else:
                    with pytest.raises(grpc.aio.AioRpcError) as refused:
                        await call
                    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_health_answers_any_run_certificate_and_nothing_answers_without_one(mesh):
    secrets, learner, _, _ = mesh
    with caller_env(grpc_user_env(secrets, "rollout")):
        async with open_channel(learner, retries=False) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    async with grpc.aio.insecure_channel(learner) as channel:  # a local user without the run's certificates
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await learner_pb2_grpc.LearnerControlServiceStub(channel).Pause(learner_pb2.PauseRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
