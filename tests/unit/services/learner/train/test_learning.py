"""GRPO actually learns: the tiny model's own samples, reward = share of tokens equal to 7.

A minimal local sampler (torch.multinomial over full forwards; not the rollout service)
draws 8 responses for each of 4 prompts per step. At random init the model emits token 7
about 1/64 of the time; a few dozen GRPO steps must raise the mean reward clearly.
"""

import numpy as np
import torch

from meshrl.algos.batch import RolloutBatch
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.train.helpers import VOCAB, build_tiny_llama

TARGET, PROMPTS, GROUP, PROMPT_LEN, RESPONSE_LEN, STEPS = 7, 4, 8, 4, 8, 30


@torch.no_grad()
def sample(model, prompts: torch.Tensor, length: int, generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Autoregressive multinomial sampling at T=1; returns (tokens [N, length], their log-probs)."""
    ids, logps = prompts, []
    for _ in range(length):
        logits = model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[:, -1].float()
        logp = torch.log_softmax(logits, dim=-1)
        token = torch.multinomial(logp.exp(), 1, generator=generator)
        logps.append(logp.gather(-1, token))
        ids = torch.cat([ids, token], dim=1)
    return ids[:, prompts.shape[1] :], torch.cat(logps, dim=1)


def rollout(model, generator) -> RolloutBatch:
    prompts = torch.randint(1, VOCAB, (PROMPTS, PROMPT_LEN), generator=generator)
    prompts = prompts.repeat_interleave(GROUP, dim=0)
    tokens, logps = sample(model, prompts, RESPONSE_LEN, generator)
    rewards = (tokens == TARGET).float().mean(dim=1)
    return RolloutBatch(
        prompt_ids=prompts,
        prompt_mask=torch.ones_like(prompts),
        response_ids=tokens,
        response_mask=torch.ones_like(logps),
        rewards=rewards,
        behaviour_logprobs=logps,
        group_ids=torch.arange(PROMPTS).repeat_interleave(GROUP),
    )


def test_grpo_raises_reward_on_a_learnable_task():
    trainer = TrainerConfig(micro_batch_size=16, optim={"lr": 1e-2, "min_lr_ratio": 1.0})
    algo = AlgorithmConfig(
        advantage_estimator="grpo", policy_loss="ppo", loss_agg_mode="seq-mean-token-mean", kl_coef=0.0
    )
    step = TrainStep(build_policy(build_tiny_llama(), trainer, total_steps=STEPS), algo, trainer)
    generator = torch.Generator().manual_seed(0)
    rewards = []
    for i in range(STEPS):
        batch = rollout(step.policy.model, generator)
        metrics = step(batch, i)
        rewards.append(metrics["reward"])
    first, last = np.mean(rewards[:5]), np.mean(rewards[-5:])
    print("reward per step:", [round(r, 3) for r in rewards])
    assert last > first + 0.2, [round(r, 3) for r in rewards]
