"""The contract between the rollout's episodes and the learner, on real parts: episodes played
by the real rollout (`AgentRollout` on the session's vLLM engine, the tiny model) against a
real environment gRPC server (the test fake of tests/fixtures/fake_environment.py, on a real
port) go through the learner's checks, batch and one real training step of the same tiny
model.

What it proves: the learner accepts what the rollout publishes (turn spans, masks, the
first observation joined to the prompt), turns an environment failure into its reason code, and its own log-probs at the
model tokens match the engine's sampling log-probs — so masks and positions line up token
for token (a shift by one would put mismatch_kl far from 0).

Run: .venv/bin/python -m pytest tests/services/learner/test_real_episodes.py -m slow
"""

import numpy as np
import pytest

from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.inputs.models.load import load_causal_lm
from meshrl.services.learner.groups import check_group, groups_to_batch
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from meshrl.transport.bus.codec import unpack_uint8
from tests.services.rollout.agent.test_agent_rollout import env, rollout, task  # noqa: F401 (env: a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


def judge(group, vocab_size: int):
    return check_group(
        group, current_version=group.policy_version, max_staleness=0, vocab_size=vocab_size, need_ref=False
    )


async def test_real_episodes_pass_the_learners_checks_and_train_on_model_tokens(
    base_rollout_engine, env, tiny_model_dir
):
    client, _ = env
    model = load_causal_lm(str(tiny_model_dir))
    vocab = model.config.vocab_size
    groups = [
        await rollout(base_rollout_engine, client, max_turns=3).generate_group(task("chatty", "g-c-real", n=2)),
        await rollout(base_rollout_engine, client, max_turns=2).generate_group(task("first_obs", "g-f-real", n=2)),
    ]
    for group in groups:
        verdict = judge(group, vocab)
        assert verdict.keep, (group.group_id, verdict)
    batch = groups_to_batch(groups, pad_id=0, need_ref=False, turn_credit=("env",))
    masks = [unpack_uint8(s.loss_mask) for g in groups for s in g.samples]
    for row, mask in enumerate(masks):
        assert batch.loss_mask[row, : len(mask)].tolist() == mask.astype(float).tolist()
    assert all((mask == 0).any() and mask[-1] == 1 for mask in masks)  # holes between turns
    trainer = TrainerConfig(micro_batch_size=4, old_logprobs="recompute", optim={"lr": 1e-4})
    algo = AlgorithmConfig(
        advantage_estimator="grpo", policy_loss="ppo", kl_coef=0.0, rollout_correction={"mode": "token", "cap": 2.0}
    )
    step = TrainStep(build_policy(model, trainer, total_steps=1), algo, trainer, max_staleness=0, temperature=1.0)
    metrics = step(batch, 0)
    print(f"\nmismatch_kl over the real episodes' model tokens: {metrics['mismatch_kl']:.2e}")
    assert metrics["mismatch_kl"] < 1e-3, metrics["mismatch_kl"]  # engine and learner agree token for token
    assert metrics["completions/mean_length"] == np.mean([m.sum() for m in masks])


async def test_an_environment_failure_is_dropped_with_its_code(base_rollout_engine, env):
    client, _ = env
    group = await rollout(base_rollout_engine, client, max_turns=3).generate_group(task("hang", "g-h-real", n=2))
    verdict = judge(group, 1 << 20)
    assert (verdict.keep, verdict.reason) == (False, "env_deadline_exceeded")
    assert verdict.detail == group.drop_reason
