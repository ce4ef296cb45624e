"""The learner's GRPO gradient is the paper's, computed the plain way.

`TrainStep` trains on padded blocks (prompts left-padded, responses right-padded, micro-batches,
a global loss denominator, the clipped ratio); the reference here runs one unpadded forward per
sequence and differentiates the GRPO loss as written (Shao et al. 2024, arXiv:2402.03300, with
the seq-mean-token-mean aggregation):

    A_i = (r_i − mean_g r) / (std_g r + ε)        L = −(1/N) Σ_i (1/|o_i|) Σ_t A_i · π(o_i,t)/π_old(o_i,t)

at π_old = π (ratio 1, gradient A_i ∇log π). Both must give the same gradient on the same batch:
ragged prompts and answers, several groups, one optimizer step's worth. (Measured on
SmolLM2-135M with its own sampled answers in docs/benchmarks.md, "Time to accuracy".)

    .venv/bin/python -m pytest -q tests/unit/services/learner/train/test_grpo_gradient.py
"""

import copy

import torch

from benchmarks.grpo_gradient_parity import step_gradient
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch

N, GROUP = 16, 4


def reference_gradient(model, batch) -> dict[str, torch.Tensor]:
    rewards = batch.rewards.view(-1, GROUP).double()
    advantages = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-6)).view(-1)
    model.zero_grad()
    for i in range(len(batch.rewards)):
        prompt = batch.prompt_ids[i][batch.prompt_mask[i].bool()]
        response = batch.response_ids[i][batch.response_mask[i].bool()]
        logits = model(input_ids=torch.cat([prompt, response])[None]).logits[0, len(prompt) - 1 : -1]
        logprobs = torch.log_softmax(logits.float(), -1).gather(-1, response[:, None])[:, 0]
        ratio = torch.exp(logprobs - logprobs.detach())
        (-(advantages[i].float() * ratio).mean() / len(batch.rewards)).backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def test_the_padded_micro_batched_gradient_is_the_per_sequence_grpo_gradient():
    batch = random_batch(n=N, group_size=GROUP, seed=3, with_ref=False, with_behaviour=False)
    model = build_tiny_llama(seed=1)
    ours = step_gradient(copy.deepcopy(model), batch, micro_batch_size=5)  # ragged micro-batches
    theirs = reference_gradient(copy.deepcopy(model), batch)
    assert ours.keys() == theirs.keys()
    for name in theirs:
        torch.testing.assert_close(ours[name], theirs[name], rtol=1e-4, atol=1e-6, msg=name)
    assert sum(g.norm() ** 2 for g in theirs.values()) > 1e-6  # a gradient that is there to compare
