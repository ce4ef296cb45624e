"""Part 7: a black-box agent written against the OpenAI client, run by an environment as its
policy, through the rollout's real /v1/chat/completions (aiohttp on a real port) on the real
vLLM engine; the environment is a test fake on a real gRPC port (fake_environment.py, kinds
agent*), the agent a test fake written with the `openai` package (fake_agent.py).

Run: .venv/bin/python -m pytest tests/services/rollout/agent/test_policy_endpoint.py -m slow
"""

import socket

import numpy as np
import openai
import psutil
import pytest
import pytest_asyncio

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.agent.chat_format import ChatFormat
from meshrl.services.rollout.agent.env_client import EnvClientSettings, EnvironmentClient
from meshrl.services.rollout.agent.episode import EpisodeContext, EpisodeLimits
from meshrl.services.rollout.agent.group import AgentRollout
from meshrl.services.rollout.agent.parsers import get_tool_parser
from meshrl.services.rollout.agent.policy.endpoint import PolicyEndpoint
from meshrl.services.rollout.agent.policy.http import start_policy_server
from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from tests.fixtures.fake_environment import start_fake_environment
from tests.fixtures.vllm import hf_logprobs

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


@pytest_asyncio.fixture(loop_scope="session")
async def served(base_rollout_engine):
    """(rollout with the endpoint, fake env record, endpoint)."""
    server, address, record = await start_fake_environment()
    client = EnvironmentClient(EnvClientSettings(addresses=(address,), timeout_s=120))
    endpoint = PolicyEndpoint(model="policy")
    runner = await start_policy_server(endpoint, 0)
    chat = ChatFormat(base_rollout_engine.tokenizer, get_tool_parser("hermes"), 24)
    limits = EpisodeLimits(max_turns=4, max_episode_tokens=200, max_model_len=256)
    yield (
        AgentRollout(EpisodeContext(base_rollout_engine, client, chat, limits, policy=endpoint), policy_server=runner),
        record,
        endpoint,
    )
    await runner.cleanup()
    await client.aclose()
    await server.stop(0)


def task(kind: str, group_id: str, n: int = 2) -> pb.PromptTask:
    return pb.PromptTask(
        run_id="test-run",
        group_id=group_id,
        environment=kind,
        prompt_text="hi",
        sampling=pb.SamplingParams(n=n, temperature=1.0, max_tokens=6, seed=9),
    )


async def test_a_black_box_agents_calls_become_one_trajectory(served, tiny_model_dir):
    rollout, record, _ = served
    tok = rollout.ctx.engine.tokenizer
    group = await rollout.generate_group(task("agent", "g-agent"))
    assert not group.drop_reason and len(group.samples) == 2
    prompt = unpack_int32(group.task.prompt_token_ids)
    assert tok.decode(prompt.tolist()) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    for sample in group.samples:
        ids, logprobs = unpack_int32(sample.response_token_ids), unpack_float32(sample.behaviour_logprobs)
        mask = np.frombuffer(sample.loss_mask, dtype=np.uint8)
        assert record.agent_runs[f"g-agent/{sample.index}"] == (3, [])
        assert len(sample.turns) == 3 and (sample.env_reward, sample.turns[-1].reward) == (3.0, 3.0)
        for turn in sample.turns[:2]:  # what the agent added between its calls: the template's delta, masked
            assert turn.observation_text.endswith("<|im_start|>user\nGo on.<|im_end|>\n<|im_start|>assistant\n")
            assert (
                not mask[turn.token_end : turn.observation_end].any() and mask[turn.token_start : turn.token_end].all()
            )
        np.testing.assert_allclose(logprobs[mask == 1], hf_logprobs(tiny_model_dir, prompt, ids)[mask == 1], atol=1e-4)
        assert sample.finish_reason == pb.FINISH_REASON_STOP  # the environment said done


async def test_keys_are_per_episode_and_die_with_it(served):
    rollout, record, endpoint = served
    await rollout.generate_group(task("agent", "g-keys", n=1))
    used = record.resets and next(r for r in record.resets if r.episode_id == "g-keys/0").policy
    assert used.base_url == endpoint.base_url and used.base_url.startswith("http://127.0.0.1:") and used.api_key
    for key in ("", "not-a-key", used.api_key):  # none, wrong, and the ended episode's own key
        client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=key or "x", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            await client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "hi"}])
        await client.close()
    assert not endpoint.sessions.by_hash  # every episode's key revoked


async def test_the_endpoint_listens_on_loopback_only(served):
    _, _, endpoint = served
    port = int(endpoint.base_url.rsplit(":", 1)[1].split("/")[0])
    others = [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]
    assert others, "this host has no non-loopback IPv4 address to try"
    for address in others:
        with pytest.raises(ConnectionRefusedError), socket.create_connection((address, port), timeout=5):
            pass
    socket.create_connection(("127.0.0.1", port), timeout=5).close()


@pytest.mark.parametrize(
    "kind, reason, agent_saw",
    [
        (
            "agent_rewrite",
            "the environment drove its own agent, but a call changed message 0 (user) of the conversation (call 1)",
            ["invalid_request_error"],
        ),
        ("agent_silent", "the environment drove its own agent, but the agent made no call to the policy endpoint", []),
        (
            "agent_tools",
            "the environment drove its own agent, but the first prompt (the task's messages, the tools, "
            "the first observation) is ",
            ["context_length_exceeded"],
        ),
    ],
)
async def test_calls_that_are_not_one_episode_drop_the_group(served, kind, reason, agent_saw):
    rollout, record, _ = served
    group = await rollout.generate_group(task(kind, f"g-{kind}", n=1))
    assert not group.samples
    assert group.drop_reason.startswith(f"env_invalid_answer: episode g-{kind}/0: environment INVALID_ANSWER: {reason}")
    assert record.agent_runs[f"g-{kind}/0"][1] == agent_saw


async def test_an_agent_past_max_turns_is_told_and_the_episode_ends_truncated(served):
    rollout, record, _ = served
    group = await rollout.generate_group(task("agent_long", "g-long", n=1))
    (sample,) = group.samples
    assert record.agent_runs["g-long/0"] == (4, ["context_length_exceeded"])
    assert len(sample.turns) == 4 and sample.finish_reason == pb.FINISH_REASON_LENGTH and sample.env_reward == 4.0


async def test_an_environment_that_drives_its_agent_needs_the_endpoint(base_rollout_engine):
    server, address, _ = await start_fake_environment()
    client = EnvironmentClient(EnvClientSettings(addresses=(address,), timeout_s=30))
    chat = ChatFormat(base_rollout_engine.tokenizer, get_tool_parser("hermes"), 24)
    rollout = AgentRollout(EpisodeContext(base_rollout_engine, client, chat, EpisodeLimits(max_model_len=256)))
    try:
        group = await rollout.generate_group(task("agent", "g-noendpoint", n=1))
        assert group.drop_reason.startswith(
            "no_policy_endpoint: episode g-noendpoint/0: environment FAILED_PRECONDITION: "
            "the environment runs its own agent"
        )
        assert "set rollout.agent.policy_endpoint.enabled: true" in group.drop_reason
    finally:
        await client.aclose()
        await server.stop(0)
