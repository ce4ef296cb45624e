"""Refused tool calls and group seeds, through the rollout's real agent loop (client, episodes,
chat format, parser, group) against the real `tool_arith` environment served by the SDK on a
real gRPC port. The policy is a TEST FAKE (`ScriptedPolicy`): it writes fixed turns in place
of vLLM, so a malformed call can be made on purpose, and records every prompt it is given.

- A malformed call: the environment gets it in `rejected_tool_calls` (not as a final answer),
  the model's next prompt holds meshrl's error as the observation, and its valid call then
  gets the calculator's answer, and its final answer the reward.
- Seeds: the episodes of a group share `group_seed` and have their own `seed`; a retry of the
  group sends the same ones.

Run: .venv/bin/python -m pytest tests/services/rollout/agent/test_refused_calls.py
"""

from types import SimpleNamespace

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.env_sdk import start, stop
from meshrl.inputs.models.tiny import build_tokenizer
from meshrl.services.environment.builtins.tool_arith import ToolArith
from meshrl.services.rollout.agent.chat_format import ChatFormat
from meshrl.services.rollout.agent.env_client import EnvClientSettings, EnvironmentClient
from meshrl.services.rollout.agent.episode import EpisodeContext, EpisodeLimits
from meshrl.services.rollout.agent.group import AgentRollout
from meshrl.services.rollout.agent.parsers import get_tool_parser

MALFORMED = "<tool_call>{865*342</tool_call>"
VALID = '<tool_call>{"name": "calculator", "arguments": {"expression": "865*342"}}</tool_call>'
SCRIPT = [MALFORMED, VALID, "\\boxed{295830}"]


class ScriptedPolicy:
    """A TEST FAKE of the rollout engine: turn t of every episode is SCRIPT[t], ended by
    <|im_end|> as a model that stopped would; each prompt it is given is kept by turn name."""

    def __init__(self, tokenizer):
        self.tokenizer, self.version = tokenizer, 0
        self.config = SimpleNamespace(replica_id="scripted-0")
        self.prompts: dict[str, list[int]] = {}

    async def generate_turn(self, prompt_ids, sampling, *, max_tokens, seed, name):
        self.prompts[name] = list(prompt_ids)
        text = SCRIPT[int(name.rsplit("/t", 1)[1])]
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return SimpleNamespace(
            token_ids=ids,
            logprobs=SimpleNamespace(logprobs=[-0.5] * len(ids)),
            text=text,
            finish_reason="stop",
            weight_versions=None,
        )


class RecordingToolArith(ToolArith):
    """The built-in tool_arith, keeping what each Reset and Step carried (a spy, not a fake)."""

    name = "tool_arith"
    tasks: list = []
    turns: dict = {}

    def reset(self, task):
        RecordingToolArith.tasks.append(task)
        return super().reset(task)

    def step(self, turn):
        RecordingToolArith.turns[(self.task.episode_id, turn.index)] = turn
        return super().step(turn)


@pytest.fixture
async def rollout():
    server, port = await start(RecordingToolArith, host="127.0.0.1")
    client = EnvironmentClient(EnvClientSettings(addresses=(f"127.0.0.1:{port}",), timeout_s=10.0))
    policy = ScriptedPolicy(build_tokenizer())
    chat = ChatFormat(policy.tokenizer, get_tool_parser("hermes"), max_observation_tokens=256)
    limits = EpisodeLimits(max_turns=4, max_episode_tokens=2048, max_model_len=4096)
    yield AgentRollout(EpisodeContext(policy, client, chat, limits)), policy
    await client.aclose()
    await stop(server, grace=0)


def task(group_id: str, seed: int = 77) -> pb.PromptTask:
    return pb.PromptTask(
        run_id="test-run",
        group_id=group_id,
        environment="tool_arith",
        prompt_text="What is 865*342?",
        ground_truth_json="295830",
        sampling=pb.SamplingParams(n=2, temperature=1.0, max_tokens=256, seed=seed),
    )


async def test_a_refused_call_is_shown_to_the_environment_and_the_model_which_then_calls_right(rollout):
    agent, policy = rollout
    group = await agent.generate_group(task("g-refused"))
    assert not group.drop_reason and len(group.samples) == 2
    for sample in group.samples:
        episode = f"g-refused/{sample.index}"
        assert [t.text for t in sample.turns] == SCRIPT and sample.env_reward == 1.0
        (refused_record,) = sample.turns[0].tool_calls
        assert refused_record.id == "call_0_0" and refused_record.error.startswith("the call is not valid JSON")
        seen = RecordingToolArith.turns[(episode, 0)]  # the environment saw the refusal, not an answer
        assert seen.tool_calls == () and seen.tried_tools
        assert [(c.id, c.raw_text, c.reason) for c in seen.rejected_tool_calls] == [
            ("call_0_0", MALFORMED, refused_record.error)
        ]
        next_prompt = policy.tokenizer.decode(policy.prompts[f"{episode}/t1"])
        after_turn = next_prompt.split(MALFORMED, 1)[1]  # what the model read after its malformed call
        assert (
            after_turn
            == f"<|im_end|>\n<|im_start|>tool\nerror: {refused_record.error}<|im_end|>\n<|im_start|>assistant\n"
        )
        assert [c.name for c in RecordingToolArith.turns[(episode, 1)].tool_calls] == ["calculator"]
        assert sample.turns[1].observation_text.startswith("\n<|im_start|>tool\n295830<|im_end|>")
        assert sample.turns[2].done and sample.finish_reason == pb.FINISH_REASON_STOP


async def test_a_group_shares_its_seed_each_episode_has_its_own_and_a_retry_repeats_them(rollout):
    agent, _ = rollout

    async def seeds(group_id: str, seed: int) -> dict:
        RecordingToolArith.tasks.clear()
        await agent.generate_group(task(group_id, seed))
        return {t.episode_id: (t.group_seed, t.seed) for t in RecordingToolArith.tasks}

    first = await seeds("g-seeds", 77)
    assert set(first) == {"g-seeds/0", "g-seeds/1"}
    assert {g for g, _ in first.values()} == {77}  # one group, one group seed: one task
    assert len({s for _, s in first.values()}) == 2 and 77 not in {s for _, s in first.values()}
    assert await seeds("g-seeds", 77) == first  # the same group again (a redelivered task)
    unseeded = await seeds("g-unseeded", 0)
    group_seeds = {g for g, _ in unseeded.values()}
    assert len(group_seeds) == 1 and 0 not in group_seeds  # still one task per group
    assert {s for _, s in unseeded.values()} == {0}
