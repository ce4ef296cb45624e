"""The offline DPO step on a PreferenceBatch (Rafailov et al. 2023, "Direct Preference Optimization").

For each pair (prompt x, chosen y_w, rejected y_l), with summed response log-probs
log π(y|x) = Σ_t log π(y_t | x, y_<t) under the policy and the frozen reference:

    h = (log π(y_w) − log π_ref(y_w)) − (log π(y_l) − log π_ref(y_l))
    L = −log σ(β·h)      (or any registered preference loss: `algorithm.policy_loss`, or a
                          weighted list in `dpo_loss_type` under `policy_loss: dpo`)

Chosen and rejected go through the policy in one forward (2b rows). The reference sums are
given with the batch (precomputed once by the reference service), so no reference model
lives in the learner. The mean over pairs is taken over the whole mini-batch: each
micro-batch backpropagates Σ L / (global pair count, all-reduced), the same split-invariance
as the RL step. `algorithm.dpo_ld_alpha` (LD-DPO) weights the summed log-probs of the policy
here and of the reference in the offline loop; `dpo_use_weighting` (WPO) weights each pair's
loss (`meshrl/algos/preference_weighting/`). Metrics use TRL's names (`rewards/chosen`, `rewards/margins`, ...).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from meshrl.algos import check_finite, dpo_loss
from meshrl.algos.batch import PreferenceBatch
from meshrl.algos.head_plan import HeadPlan, plan_head
from meshrl.algos.logprobs import response_stats, sequence_logprobs
from meshrl.algos.preference_weighting import ld_weighted_sums, wpo_pair_weights
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.fsdp import DistContext, set_gradient_sync
from meshrl.services.learner.train.metrics import MetricSums, Timer
from meshrl.services.learner.train.policy import TrainedModel
from meshrl.services.learner.train.transaction import StepTransaction, snapshot_place


class PairLogprobs(NamedTuple):
    """What the preference loss reads from one forward over a micro-batch's 2b rows."""

    chosen: torch.Tensor  # [b] summed log π(y_w), LD-weighted when ld_alpha is set
    rejected: torch.Tensor  # [b] the same for y_l
    chosen_full: torch.Tensor  # [b] Σ log π(y_w) without LD weighting (the sft term's)
    pair_weights: torch.Tensor | None  # [b] WPO's w(y_w)·w(y_l), when asked


def pair_logprobs(
    policy: TrainedModel,
    pairs: PreferenceBatch,
    temperature: float = 1.0,
    head: HeadPlan | None = None,
    *,
    ld_alpha: float | None = None,
    use_weighting: bool = False,
) -> PairLogprobs:
    """One forward over the chosen rows then the rejected rows; `head`: the LM head's plan
    (None: the device's default chunks)."""
    stacked = pairs.stacked()
    head_args = {} if head is None else {"chunk_elements": head.chunk_elements, "head_kernel": head.kernel}
    with policy.autocast():
        stats = response_stats(
            policy.model, stacked, temperature=temperature, with_sum_pi_squared=use_weighting, **head_args
        )
    mask, b = stacked.response_mask, pairs.batch_size
    plain = sequence_logprobs(stats.logprobs, mask)
    summed = plain if ld_alpha is None else ld_weighted_sums(stats.logprobs, mask, alpha=ld_alpha)
    weights = wpo_pair_weights(stats.logprobs, stats.sum_pi_squared, mask) if use_weighting else None
    return PairLogprobs(summed[:b], summed[b:], plain[:b], weights)


def policy_sequence_logprobs(
    policy: TrainedModel,
    pairs: PreferenceBatch,
    temperature: float = 1.0,
    head: HeadPlan | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed log π(chosen) [b] and log π(rejected) [b] from one forward over 2b rows."""
    return pair_logprobs(policy, pairs, temperature, head)[:2]


class DPOStep:
    """`DPOStep(policy, algo, trainer)(pairs, step) -> metrics`; one optimizer step per mini-batch
    (left pending until the next forward or the reduced metrics, as in `TrainStep`)."""

    def __init__(
        self,
        policy: TrainedModel,
        algo: AlgorithmConfig,
        trainer: TrainerConfig,
        *,
        dist: DistContext | None = None,
        temperature: float = 1.0,
    ):
        self.policy, self.algo, self.trainer = policy, algo, trainer
        self.dist = dist or DistContext(device=policy.device)
        self.temperature = temperature
        self.head = plan_head(trainer.lm_head, trainer.lm_head_chunk, trainer.lm_head_memory, self.dist.device)
        # state some preference losses keep across steps (bco_pair's running reward mean)
        self.loss_state: dict = {}

    def __call__(self, pairs: PreferenceBatch, step: int) -> dict[str, float]:
        if pairs.ref_chosen_logps is None or pairs.ref_rejected_logps is None:
            raise ValueError(
                "DPO needs PreferenceBatch.ref_chosen_logps and ref_rejected_logps "
                "(summed reference log-probs); compute them with the reference "
                "service (meshrl.algos.logprobs.response_logprobs) before training"
            )
        timer, sums = Timer(self.dist.device), MetricSums()
        updates = self.trainer.ppo_epochs * min(self.trainer.mini_batches, len(pairs))
        place = snapshot_place(self.trainer.rollback, updates)
        with StepTransaction([self.policy], place, self.loss_state) as tx:  # all or nothing, as TrainStep
            with timer("step"):
                pairs = pairs.to(self.dist.device)
                for _ in range(self.trainer.ppo_epochs):
                    for mini in pairs.chunk(min(self.trainer.mini_batches, len(pairs))):
                        with timer("optimizer"):
                            tx.apply_pending()
                        self.update(mini, step, timer, sums)
                        tx.pending(self.policy)
            metrics = sums.reduce(self.dist, updates)
            with timer("optimizer"):
                tx.apply_pending()
        metrics.update(timer.as_metrics(), lr=self.policy.lr)
        self.policy.scheduler.step()
        return metrics

    def update(self, mini: PreferenceBatch, step: int, timer: Timer, sums: MetricSums) -> None:
        pairs_total = self.dist.all_reduce(torch.tensor(float(len(mini)), device=self.dist.device))
        scale = self.dist.world_size / pairs_total
        micros = mini.split(self.trainer.micro_batch_size)
        for i, micro in enumerate(micros):
            set_gradient_sync(self.policy.model, i == len(micros) - 1)
            self.micro_batch(micro, scale, step, timer, sums)
        with timer("optimizer"):
            sums.mean("grad_norm", self.policy.clip_gradients("policy", step), 1.0)

    def micro_batch(self, micro: PreferenceBatch, scale, step: int, timer: Timer, sums: MetricSums) -> None:
        a = self.algo
        with timer("forward"):
            lp = pair_logprobs(
                self.policy,
                micro,
                self.temperature,
                self.head,
                ld_alpha=a.dpo_ld_alpha,
                use_weighting=a.dpo_use_weighting,
            )
        with timer("algo"):
            loss, metrics = self.pair_loss(micro, lp)
            check_finite("dpo loss", loss, step=step)
            numerator = loss.sum()
        with timer("backward"):
            (numerator * scale).backward()
        sums.total("loss", numerator.detach() * scale / self.dist.world_size)
        self.pair_metrics(micro, lp, metrics, sums)

    def pair_loss(self, micro: PreferenceBatch, lp):
        """(per-pair loss [b], metrics) of the configured preference losses (`meshrl.algos.dpo`)."""
        a = self.algo
        return dpo_loss(
            lp.chosen,
            lp.rejected,
            micro.ref_chosen_logps,
            micro.ref_rejected_logps,
            a.beta,
            a.preference_losses,
            weights=a.dpo_loss_weights,
            chosen_lengths=micro.chosen_mask.sum(-1).to(lp.chosen.dtype),
            rejected_lengths=micro.rejected_mask.sum(-1).to(lp.chosen.dtype),
            state=self.loss_state,
            options=a.loss_options,
            policy_chosen_full=lp.chosen_full,
            pair_weights=lp.pair_weights,
        )

    def pair_metrics(self, micro: PreferenceBatch, lp, metrics: dict, sums: MetricSums) -> None:
        """The loss's metrics, the policy's mean log-probs and WPO's mean pair weight, per pair."""
        pairs = float(len(micro))
        sums.add_dict(metrics, pairs)
        sums.mean("logps/chosen", lp.chosen.detach().mean(), pairs)
        sums.mean("logps/rejected", lp.rejected.detach().mean(), pairs)
        if lp.pair_weights is not None:
            sums.mean("wpo/pair_weight", lp.pair_weights.mean(), pairs)
