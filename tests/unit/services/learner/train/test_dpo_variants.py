"""DPOStep with TRL's DPO variants on a real tiny model, checked against a plain HF forward
row by row: LD-DPO's sums, WPO's pair weights, and the sft term in the step's loss."""

import math

import pytest
import torch

from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.dpo import DPOStep, pair_logprobs
from meshrl.services.learner.train.policy import build_policy
from tests.unit.services.learner.train.helpers import build_tiny_llama
from tests.unit.services.learner.train.test_dpo import pairs, with_reference


def hand_rows(model, batch):
    """Per response token (log π(y_t), Σ_v π(v)²) of each stacked row, one unpadded HF forward
    per row: B chosen rows then B rejected rows."""
    stacked, rows = batch.stacked(), []
    for i in range(2 * batch.batch_size):
        prompt = stacked.prompt_ids[i][stacked.prompt_mask[i].bool()]
        response = stacked.response_ids[i][stacked.response_mask[i].bool()]
        with torch.no_grad():
            logits = model(torch.cat([prompt, response])[None]).logits[0].double()
        probs = logits[len(prompt) - 1 : -1].softmax(-1)
        rows.append((probs.log().gather(-1, response[:, None])[:, 0], (probs**2).sum(-1)))
    return rows


def ld_sum(chosen, rejected, alpha):
    shared = min(len(chosen), len(rejected))
    return chosen[:shared].sum() + alpha * chosen[shared:].sum()


def make_step(**algo):
    trainer = TrainerConfig(micro_batch_size=3, optim={"lr": 3e-3})
    return DPOStep(
        build_policy(build_tiny_llama(), trainer, total_steps=10),
        AlgorithmConfig(offline=True, beta=0.5, **algo),
        trainer,
    )


def test_ld_sums_and_wpo_weights_match_a_plain_forward():
    step, batch = make_step(policy_loss="sigmoid"), pairs()
    rows, b = hand_rows(step.policy.model, batch), batch.batch_size
    with torch.no_grad():
        got = pair_logprobs(step.policy, batch, ld_alpha=0.3, use_weighting=True)
    chosen = [ld_sum(rows[i][0], rows[b + i][0], 0.3) for i in range(b)]
    rejected = [ld_sum(rows[b + i][0], rows[i][0], 0.3) for i in range(b)]
    torch.testing.assert_close(got.chosen.double(), torch.stack(chosen), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.rejected.double(), torch.stack(rejected), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        got.chosen_full.double(), torch.stack([rows[i][0].sum() for i in range(b)]), atol=1e-5, rtol=1e-5
    )
    w = [math.exp((lp - sq.log()).mean().item()) for lp, sq in rows]
    torch.testing.assert_close(
        got.pair_weights.double(),
        torch.tensor([w[i] * w[b + i] for i in range(b)], dtype=torch.float64),
        atol=1e-6,
        rtol=1e-5,
    )
    assert any(len(rows[i][0]) != len(rows[b + i][0]) for i in range(b))  # some tails to weight


def test_step_loss_with_wpo_and_the_sft_term():
    # reference = starting policy: every log-ratio is 0, so sigmoid = log 2 on each pair;
    # WPO: the step's loss = mean over pairs of log 2 · w(y_w)·w(y_l)
    step = make_step(policy_loss="sigmoid", dpo_use_weighting=True)
    batch = with_reference(step, pairs())
    with torch.no_grad():
        weights = pair_logprobs(step.policy, batch, use_weighting=True).pair_weights
    metrics = step(batch, 0)
    assert metrics["loss"] == pytest.approx(math.log(2) * weights.mean().item(), rel=1e-5)
    assert metrics["wpo/pair_weight"] == pytest.approx(weights.mean().item(), rel=1e-5)
    # sigmoid + ½·sft: sft is each micro-batch's (3 pairs) chosen token-mean NLL
    step = make_step(policy_loss="dpo", dpo_loss_type=["sigmoid", "sft"], dpo_loss_weights=[1.0, 0.5])
    batch = with_reference(step, pairs())
    rows = hand_rows(step.policy.model, batch)
    nll = [-torch.cat([rows[i][0] for i in micro]).mean().item() for micro in ((0, 1, 2), (3, 4, 5))]
    assert step(batch, 0)["loss"] == pytest.approx(math.log(2) + 0.5 * sum(nll) / 2, rel=1e-5)
