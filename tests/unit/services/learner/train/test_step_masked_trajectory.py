"""One real training step (TrainStep, tiny Llama, CPU) on multi-turn trajectories.

An episode's response is [model turn][observation][model turn]...: the observation tokens
are the model's input (attended to) but never its output. Two things must hold:

- nothing about an observation token's own prediction reaches the update: changing the
  logits at observation positions, or the behaviour / reference log-probs the engine and
  the reference sent for them, leaves the new weights bit-for-bit the same;
- the step's gradient equals the one computed by hand from the model tokens alone: each
  episode run through the model on its own (no padding, no batch), log-probs gathered at
  its model tokens only, GRPO's advantage times their sum, over the count of model tokens.

And an environment's turn rewards are credited to the turns that earned them by per-token
estimators, while one-score-per-episode estimators see the episode's total unchanged.
"""

import copy
import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from meshrl.algos.batch import RolloutBatch
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.metrics import MetricSums, Timer
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.train.helpers import build_tiny_llama, weights_of

PROMPTS = [np.array([5, 6, 7]), np.array([8, 9, 10])]
# (response ids, loss mask): turn, observation, turn (and a single-turn sample per group)
EPISODES = [
    (np.array([11, 12, 13, 40, 41, 42, 14, 15]), np.array([1, 1, 1, 0, 0, 0, 1, 1])),
    (np.array([16, 17, 43, 44, 18]), np.array([1, 1, 0, 0, 1])),
    (np.array([19, 20, 21]), np.array([1, 1, 1])),
    (np.array([22, 45, 46, 47, 48, 23, 24]), np.array([1, 0, 0, 0, 0, 1, 1])),
]
REWARDS = [1.0, 0.0, 0.5, 2.0]
GROUP_IDS = [0, 0, 1, 1]


def holey_batch(behaviour_in_holes: float = 0.0, ref_in_holes: float = 0.0) -> RolloutBatch:
    """The four episodes; the log-probs the rollout and the reference sent for the
    observation tokens are set to the given values (the contract says 0 for the behaviour)."""
    rng = np.random.default_rng(0)
    responses = [ids for ids, _ in EPISODES]
    masks = [mask for _, mask in EPISODES]

    def per_token(base, in_holes):
        return [np.where(m > 0, base + 0.1 * rng.standard_normal(len(m)), in_holes) for m in masks]

    return RolloutBatch.from_sequences(
        [PROMPTS[g] for g in GROUP_IDS],
        responses,
        rewards=np.array(REWARDS),
        group_ids=np.array(GROUP_IDS),
        pad_id=0,
        loss_masks=masks,
        behaviour_logprobs=per_token(-4.1, behaviour_in_holes),
        ref_logprobs=per_token(-4.2, ref_in_holes),
    )


OBSERVATION_IDS = torch.arange(40, 49)  # the episodes' observation tokens (the model's: 11-24)


class LogitsInTheOpen(nn.Module):
    """The tiny Llama behind a plain forward (no decoder/head split), so the step computes
    the full logits; with `noise` on, random logits of size ~50 are added wherever the next
    token is an observation token (the logits that predict it)."""

    def __init__(self, model):
        super().__init__()
        self.inner, self.config = model, model.config
        self.noise = False

    def forward(self, input_ids, **kwargs):
        out = self.inner(input_ids=input_ids, **kwargs)
        if self.noise:
            predicts_observation = torch.isin(input_ids[:, 1:], OBSERVATION_IDS)
            noise = 50.0 * torch.randn(out.logits[:, :-1].shape) * predicts_observation[..., None]
            out.logits = out.logits + torch.cat([noise, torch.zeros_like(out.logits[:, -1:])], dim=1)
        return out


def make_step(model, **algo) -> TrainStep:
    trainer = TrainerConfig(
        micro_batch_size=2,
        ppo_epochs=1,
        mini_batches=1,
        old_logprobs=algo.pop("old_logprobs", "recompute"),
        optim={"lr": 1e-2, "max_grad_norm": 1e6},
    )
    settings = dict(
        advantage_estimator="grpo",
        policy_loss="ppo",
        loss_agg_mode="token-mean",
        kl_coef=0.1,
        kl_in="loss",
        entropy_coeff=0.01,
        rollout_correction={"mode": "token", "cap": 2.0},
    )
    return TrainStep(
        build_policy(model, trainer, total_steps=4), AlgorithmConfig(**{**settings, **algo}), trainer, max_staleness=0
    )


def test_the_batch_attends_to_observations_and_trains_on_model_tokens():
    batch = holey_batch()
    assert batch.response_mask.sum(dim=1).tolist() == [8, 5, 3, 7]
    assert batch.loss_mask.sum(dim=1).tolist() == [5, 3, 3, 3]
    assert batch.response_lengths().tolist() == [5, 3, 3, 3]


def test_observation_logits_and_log_probs_do_not_change_the_update():
    """Full logits (no head split), KL in the loss, entropy bonus, rollout correction from the
    behaviour log-probs: every path that reads a token's prediction."""
    updates = []
    for noisy in (False, True):
        model = LogitsInTheOpen(build_tiny_llama(seed=3))
        batch = holey_batch(behaviour_in_holes=-7.5 if noisy else 0.0, ref_in_holes=-0.3 if noisy else 0.0)
        model.noise = noisy
        step = make_step(model)
        metrics = step(batch, 0)
        updates.append((weights_of(model), metrics))
    (clean, clean_metrics), (noisy, noisy_metrics) = updates
    assert all(torch.equal(clean[k], noisy[k]) for k in clean)
    for key in ("loss", "pg_loss", "kl", "entropy", "mismatch_kl", "grad_norm", "completions/mean_length"):
        assert clean_metrics[key] == noisy_metrics[key], key
    assert clean_metrics["completions/mean_length"] == 3.5  # (5 + 3 + 3 + 3) / 4 model tokens
    assert clean_metrics["grad_norm"] > 0


def test_the_split_head_path_never_scores_observation_tokens():
    """The default path runs the LM head on model tokens only: the log-probs and entropy it
    returns are 0 at observation tokens, and the engine's / reference's values there are never
    read (the same update with garbage in them)."""
    updates = []
    for in_holes in (0.0, -9.0):
        model = build_tiny_llama(seed=3)
        step = make_step(model)
        batch = holey_batch(behaviour_in_holes=in_holes, ref_in_holes=in_holes)
        with torch.no_grad():
            old, _ = step.recompute_logprobs(batch)
        assert (old[batch.loss_mask == 0] == 0).all() and (old[batch.loss_mask > 0] < 0).all()
        step(batch, 0)
        updates.append(weights_of(model))
    assert all(torch.equal(updates[0][k], updates[1][k]) for k in updates[0])


def grpo_advantages() -> list[float]:
    """(r − group mean) / (group std + 1e-6), std with n − 1: groups [1, 0] and [0.5, 2]."""
    out = []
    for i, r in enumerate(REWARDS):
        group = [REWARDS[j] for j in range(4) if GROUP_IDS[j] == GROUP_IDS[i]]
        mean = sum(group) / 2
        std = (sum((x - mean) ** 2 for x in group) / 1) ** 0.5
        out.append((r - mean) / (std + 1e-6))
    return out


def hand_gradient(model) -> dict[str, torch.Tensor]:
    """∇ of −Σ_i A_i Σ_{t model token} log π(y_t) / (model tokens), each episode alone."""
    model = copy.deepcopy(model)
    model.zero_grad()
    tokens = sum(int(mask.sum()) for _, mask in EPISODES)
    total = 0.0
    for (ids, mask), group, advantage in zip(EPISODES, GROUP_IDS, grpo_advantages()):
        prompt = PROMPTS[group]
        sequence = torch.tensor(np.concatenate([prompt, ids]))[None]
        logits = model(input_ids=sequence).logits[0].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        for t in np.flatnonzero(mask):  # response token t is predicted at position P − 1 + t
            total = total - advantage * logprobs[len(prompt) - 1 + t, ids[t]]
    (total / tokens).backward()
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}


def test_the_step_is_the_hand_computed_step_on_model_tokens():
    """GRPO, PPO's loss on-policy (ratio 1, so ∇ = −A·∇log π), token-mean, no KL, no entropy,
    no rollout-correction weights."""
    model = build_tiny_llama(seed=4)
    expected = hand_gradient(model)
    step = make_step(model, kl_coef=0.0, entropy_coeff=0.0, old_logprobs="auto", rollout_correction={"mode": "none"})
    seen = {}

    def record(*_):  # the gradient the step built, read just before AdamW uses it
        seen.update({name: p.grad.detach().clone() for name, p in model.named_parameters()})

    step.policy.optimizer.register_step_pre_hook(record)
    metrics = step(holey_batch(behaviour_in_holes=-3.0), 0)
    assert step.old_source == "current"  # on-policy: the ratio is exactly 1
    for name, grad in expected.items():
        torch.testing.assert_close(seen[name], grad, atol=1e-6, rtol=1e-4, msg=name)
    assert metrics["grad_norm"] == pytest.approx(
        torch.linalg.vector_norm(torch.stack([g.norm() for g in expected.values()])).item(), rel=1e-4
    )


def credited_batch() -> RolloutBatch:
    """Episode 0's reward 1.0 holds an environment's turn rewards 0.25 (turn 0, ending at
    token 2) and 0.5 (turn 1, ending at token 7); the other 0.25 came at the episode's end."""
    batch = holey_batch()
    turns = torch.zeros_like(batch.loss_mask)
    turns[0, 2], turns[0, 7] = 0.25, 0.5
    return dataclasses.replace(batch, turn_rewards=turns)


def prepared(batch, **algo):
    step = make_step(build_tiny_llama(seed=5), kl_coef=0.0, **algo)
    return step.prepare(batch, 0, Timer(torch.device("cpu")), MetricSums())


def test_turn_rewards_are_credited_to_their_turns_by_per_token_estimators():
    """reinforce_plus_plus, γ = 1: returns are rewards-to-go over model tokens. Turn 0's tokens
    see 0.25 + 0.5 + 0.25 = 1.0; turn 1's only 0.5 + 0.25 = 0.75 (turn 0's reward is behind
    them). Without per-turn credit every token of the episode sees 1.0."""
    credited = prepared(credited_batch(), advantage_estimator="reinforce_plus_plus")
    plain = prepared(holey_batch(), advantage_estimator="reinforce_plus_plus")
    assert credited.returns[0].tolist() == pytest.approx([1.0, 1.0, 1.0, 0, 0, 0, 0.75, 0.75])
    assert plain.returns[0].tolist() == pytest.approx([1.0, 1.0, 1.0, 0, 0, 0, 1.0, 1.0])
    assert torch.equal(credited.returns[1:], plain.returns[1:])


def test_estimators_of_one_score_per_episode_see_the_same_total():
    credited = prepared(credited_batch(), advantage_estimator="grpo")
    plain = prepared(holey_batch(), advantage_estimator="grpo")
    torch.testing.assert_close(credited.advantages, plain.advantages, atol=1e-6, rtol=0)
