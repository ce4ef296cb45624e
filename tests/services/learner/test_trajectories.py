"""The learner on a real NATS server and a real tiny model, fed multi-turn episodes.

`episode_rollout` is a FAKE rollout + reward (named as such, as `fakes.seeded_rollout`): it
answers each PromptTask with a group of episodes — turn, observation, turn, with a loss mask,
turn spans, environment turn rewards and the `env` component's score — the way the rollout
(engineer B's) and the reward service publish them. Its first two groups come back with
`Group.drop_reason` (the environment timed out) and no samples and its third with a malformed loss mask.

The learner must train on the sound episodes, record the others in the ledger as dropped
with their reason (and what exactly), count them (`groups/dropped_<reason>`,
`groups/rollout_dropped_total`, Prometheus `groups_dropped{reason}`), raise the
`env_drop_rate` alert, and never train on or crash over any of them.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.ledger import read_ledger
from meshrl.services.learner.metric_logger import with_prometheus
from meshrl.telemetry.metrics import start_metrics
from meshrl.transport.bus.codec import pack_float32, pack_int32, pack_uint8
from tests.fixtures.prometheus import sample as prometheus_sample
from tests.services.learner.fakes import make_config, run_once

MASK = np.array([1, 1, 1, 0, 0, 1, 1], dtype=np.uint8)  # turn [0, 3), observation [3, 5), turn [5, 7)
# the rollout's text for an environment that timed out (services/rollout/agent/failures.py)
TIMEOUT = "episode {gid}/1: environment DEADLINE_EXCEEDED: Step turn 1 took longer than 10 s"


def episode(group: common_pb2.Group, index: int, rng) -> None:
    ids = rng.integers(1, 16, size=7).astype(np.int32)
    turn_rewards = [float(rng.integers(0, 2)) * 0.5, float(rng.integers(0, 2))]
    env = sum(turn_rewards)
    sample = group.samples.add(
        index=index,
        response_token_ids=pack_int32(ids),
        loss_mask=pack_uint8(MASK),
        behaviour_logprobs=pack_float32(np.where(MASK > 0, -2.0, 0.0)),
        reward=env,
        env_reward=env,
        has_env_reward=True,
        policy_version=group.policy_version,
        finish_reason=common_pb2.FINISH_REASON_STOP,
    )
    sample.turns.add(index=0, token_start=0, token_end=3, observation_end=5, reward=turn_rewards[0])
    sample.turns.add(index=1, token_start=5, token_end=7, reward=turn_rewards[1], done=True)
    sample.reward_components.add(name="env", value=env, weight=1.0, status=common_pb2.SCORE_STATUS_OK)


def episode_rollout(answered: list):
    async def rollout(bus):
        rng = np.random.default_rng(0)

        async def answer(task: common_pb2.PromptTask, ctx):
            group = common_pb2.Group(
                run_id=task.run_id,
                group_id=task.group_id,
                task=task,
                policy_version=task.min_policy_version,
                scored=True,
                rollout_replica="episodes-0",
            )
            if len(answered) < 2:  # dropped: published with no samples, as the rollout does
                group.drop_reason = TIMEOUT.format(gid=task.group_id)
            for i in range(0 if group.drop_reason else task.sampling.n):
                episode(group, i, rng)
            if len(answered) == 2:
                group.samples[1].loss_mask = pack_uint8(np.zeros(7, np.uint8))  # no model token
            answered.append(task)
            await bus.publish("ready", group, msg_id=group.group_id)

        await bus.worker("prompts", "rollout", answer)  # the run's durable on prompts (subjects.run_consumers)

    return rollout


@pytest.fixture
def cfg(tmp_path, tiny_model_dir):
    return make_config(
        tmp_path,
        tiny_model_dir,
        "episodes",
        **{
            "learner.steps": 2,
            "rollout.sampling.group_size": 2,
            "reward.components": '[{"name": "env", "kind": "environment", "weight": 1.0}]',
            "alerts.env_drop_rate.window": 2,
            "alerts.env_drop_rate.min_groups": 2,
        },
    )


async def test_episodes_train_and_dropped_groups_are_recorded_counted_and_alerted(cfg, nats_url):
    answered: list = []
    with start_metrics("learner", "learner-0", "episodes") as prometheus:

        def logged(built_loop):
            built_loop.logger = with_prometheus(built_loop.logger, prometheus)

        loop, state = await run_once(cfg, nats_url, rollout=episode_rollout(answered), on_built=logged)
        text = prometheus.scrape()
    assert state.step == 2 and state.groups_trained == 4  # 2 steps × 2 prompts, all sound episodes
    ledger = read_ledger(Path(cfg.run.dir) / "groups.jsonl")
    dropped = {e["group_id"]: e for e in ledger if e["event"] == "dropped"}
    trained = {e["group_id"] for e in ledger if e["event"] == "trained"}
    first, second, third = (task.group_id for task in answered[:3])
    assert dropped[first]["reason"] == dropped[second]["reason"] == "env_deadline_exceeded"
    assert dropped[first]["detail"] == TIMEOUT.format(gid=first)
    assert dropped[third]["reason"] == "malformed"
    assert dropped[third]["detail"] == "sample 1: loss_mask is all 0: the episode has no model token to train on"
    assert not trained & {first, second, third}
    rows = [json.loads(line) for line in (Path(cfg.run.dir) / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["groups/dropped_env_deadline_exceeded"] == 2 and rows[-1]["groups/dropped_malformed"] == 1
    assert rows[-1]["groups/rollout_dropped_total"] == 2
    assert rows[0]["completions/mean_length"] == 5  # the model's tokens of each 7-token response
    assert prometheus_sample(text, "meshrl_train_groups_dropped", reason="env_deadline_exceeded") == 2
    alerts = [json.loads(line) for line in (Path(cfg.run.dir) / "alerts.jsonl").read_text().splitlines()]
    (env_alert,) = [a for a in alerts if a["rule"] == "env_drop_rate"]
    assert env_alert["step"] == 0 and env_alert["values"]["dropped"] == 2
