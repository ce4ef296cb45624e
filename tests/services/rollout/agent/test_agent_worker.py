"""Tasks that name an environment, through the rollout's NATS worker and its gRPC Generate:
a real nats-server, the real vLLM engine, a real environment server on a real port (a test
fake of the environment), and the rollout's Prometheus endpoint.

Run: .venv/bin/python -m pytest tests/services/rollout/agent/test_agent_worker.py -m slow
"""

import grpc
import numpy as np
import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.api.rollout.v1 import rollout_pb2, rollout_pb2_grpc
from meshrl.config import load_config
from meshrl.services.rollout.agent.build import agent_rollout
from meshrl.services.rollout.server import start_rollout_server
from meshrl.services.rollout.worker import IN_STAGE, RolloutWorker
from meshrl.telemetry.metrics import start_metrics
from meshrl.transport.rpc import open_channel
from tests.fixtures.fake_environment import start_fake_environment
from tests.fixtures.prometheus import promtool_check, sample, scrape
from tests.services.rollout.test_worker import collect, running

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


def run_config(tiny_model_dir, address: str):
    return load_config(
        base={
            "model": {"path": str(tiny_model_dir)},
            "data": {"train": "unused.jsonl"},
            "rollout": {"max_model_len": 256, "agent": {"max_turns": 2, "max_observation_tokens": 16}},
            "environment": {"name": "chatty", "address": address, "timeout_s": 5},
        }
    )


def env_task(group_id: str, run_id: str = "test-run", environment: str = "chatty") -> pb.PromptTask:
    return pb.PromptTask(
        run_id=run_id,
        group_id=group_id,
        environment=environment,
        prompt_text="hi",
        sampling=pb.SamplingParams(n=2, temperature=1.0, max_tokens=6, seed=5),
    )


async def test_the_worker_plays_environment_tasks_as_episodes_and_counts_them(
    bus, run_id, base_rollout_engine, tiny_model_dir
):
    server, address, record = await start_fake_environment()
    handle = start_metrics("rollout", "agent-test", run_id)
    try:
        agent = await agent_rollout(run_config(tiny_model_dir, address), base_rollout_engine, metrics=handle)
        for task in (env_task("g-agent-worker", run_id), env_task("g-agent-lost", run_id, environment="lost")):
            await bus.publish(IN_STAGE, task, msg_id=task.group_id)
        async with running(RolloutWorker(bus, base_rollout_engine, agent=agent)):
            groups = {g.group_id: g for g in await collect(bus, 2)}
        group, lost = groups["g-agent-worker"], groups["g-agent-lost"]
        assert not group.drop_reason and len(group.samples) == 2
        assert lost.drop_reason.startswith("env_not_found: episode g-agent-lost/") and not lost.samples
        for episode in group.samples:
            mask = np.frombuffer(episode.loss_mask, dtype=np.uint8)
            assert len(episode.turns) == 2 and 0 < mask.sum() < mask.size  # model tokens and one observation
        assert {"g-agent-worker/0", "g-agent-worker/1"} <= set(record.closes)
        assert agent.ctx.events.counts["ended_max_turns"] == 2 and agent.ctx.events.counts["env_Step_OK"] == 4
        # the replica's /metrics over HTTP, as Prometheus scrapes it: each of issue 20's rollout series
        text = scrape(f"http://127.0.0.1:{handle.port}/metrics")
        promtool_check(text)
        assert sample(text, "meshrl_agent_episodes_total", ended="max_turns") == 2
        assert sample(text, "meshrl_agent_turns_per_episode_count") == 2  # two finished episodes ...
        assert sample(text, "meshrl_agent_turns_per_episode_sum") == 4  # ... of 2 turns each
        assert sample(text, "meshrl_agent_turns_per_episode_bucket", le="2") == 2
        assert sample(text, "meshrl_agent_turns_per_episode_bucket", le="1") == 0
        assert sample(text, "meshrl_agent_tool_call_parse_failures_total") == 0  # chatty offers no tool
        assert sample(text, "meshrl_agent_episodes_dropped_total", reason="env_not_found") == 2  # the lost group's 2
        assert sample(text, "meshrl_agent_env_call_seconds_count", method="Reset", status="OK") == 4
        assert sample(text, "meshrl_agent_env_call_seconds_count", method="Step", status="OK") == 4
        assert sample(text, "meshrl_agent_env_call_seconds_count", method="Step", status="NOT_FOUND") >= 1
        assert sample(text, "meshrl_agent_env_call_seconds_count", method="Close", status="OK") >= 2
        assert 0 < sample(text, "meshrl_agent_env_call_seconds_sum", method="Step", status="OK") < 4 * 5  # deadline 5 s
        await agent.aclose()
    finally:
        handle.close()
        await server.stop(0)


async def test_generate_over_grpc_plays_episodes_and_drops_with_a_reason(base_rollout_engine, tiny_model_dir):
    env_server, address, _ = await start_fake_environment()
    agent = await agent_rollout(run_config(tiny_model_dir, address), base_rollout_engine)
    server, port = await start_rollout_server(base_rollout_engine, 0, agent=agent)
    try:
        async with open_channel(f"127.0.0.1:{port}") as channel:
            reply = await rollout_pb2_grpc.RolloutServiceStub(channel).Generate(
                rollout_pb2.GenerateRequest(tasks=[env_task("g-grpc-ok"), env_task("g-grpc-lost", environment="lost")]),
                timeout=120,
            )
        ok, lost = reply.groups
        assert len(ok.samples) == 2 and all(s.loss_mask for s in ok.samples)
        assert lost.drop_reason.startswith("env_not_found: episode g-grpc-lost/") and not lost.samples
        assert agent.ctx.events.counts["dropped_env_not_found"] == 2
    finally:
        await agent.aclose()
        await server.stop(0)
        await env_server.stop(0)


async def test_without_an_environment_section_generate_refuses_an_environment_task(base_rollout_engine):
    server, port = await start_rollout_server(base_rollout_engine, 0)
    try:
        async with open_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await rollout_pb2_grpc.RolloutServiceStub(channel).Generate(
                    rollout_pb2.GenerateRequest(tasks=[env_task("g-none")]), timeout=30
                )
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert (
            "names environment 'chatty'" in caught.value.details() or "environment 'chatty'" in caught.value.details()
        )
        assert "has no `environment` section in its run config" in caught.value.details()
    finally:
        await server.stop(0)
