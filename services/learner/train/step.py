"""One RL training step on a RolloutBatch, for every online algorithm (PPO, GRPO, DAPO, GSPO, ...).

Top to bottom, for a batch of B sampled responses and step number s:

1. check inputs: rewards, behaviour and reference log-probs finite (errors name step and
   group); a reference is required when `kl_coef > 0`.
2. prepare, no grad, under the weights *before* the update:
   old log-probs π_old (and critic values V_old if the estimator `needs_values`) — see
   "Old log-probs" below for when this pass is skipped;
   KL k(π_old, π_ref) — subtracted from the reward per token (`kl_in: reward`,
   token_rewards = −kl_coef·k) or kept for the loss (`kl_in: loss`); an episode's
   turn-credited environment rewards, moved from its end to the turns that earned them
   (token_rewards += turn_rewards, the episode reward less their sum); DAPO overlong shaping;
   rollout correction from the engine's behaviour log-probs: weights w (one geometric-mean
   weight per row when the policy loss's ratio is registered at the sequence level) and
   rejected tokens out of the loss mask from here on; advantages from the registered
   estimator (given the token weights too); with PF-PPO, the rows redrawn by reward.
3. for ppo_epochs × mini_batches (optimizer steps), over micro-batches with gradient
   accumulation, the per-token loss

       ℓ = w · m · policy_loss(π, π_old, A)  +  kl_coef · [ρ ·] k(π, π_ref) [kl_in: loss]  −  α · H(π) · m_H

   (m: the configured loss masks; ρ: the importance ratio with `use_bias_correction_kl`;
   α: `entropy_coeff`, or its adaptive controller's value; services/learner/train/loss_terms.py)

   aggregated with `loss_numerator` / the GLOBAL `loss_denominator` of the mini-batch
   (all-reduced over ranks), so the gradient is that of `aggregate_loss` on the whole
   mini-batch whatever the micro-batch size or rank count. FSDP averages gradients over
   ranks, hence the extra factor world_size. The critic (if any) regresses on the returns
   with the clipped value loss, same aggregation, its own optimizer. Then gradient
   clipping (DTensor-aware) and AdamW — the last AdamW step only after the metrics are
   reduced, so a step that fails changes nothing (`transaction.py`, `trainer.rollback`).
4. one LR-scheduler step; metrics with TRL/verl names.

Old log-probs (`trainer.old_logprobs`): `auto` skips the no-grad pass when it is redundant —
strictly on-policy (`max_staleness` 0), one epoch, one mini-batch (so one optimizer step
per batch) and no KL in the reward (which needs π_old before the advantages): the weights
are then still those that sampled, so π_old = π, and each micro-batch takes its forward's
own log-probs, detached, as π_old (ratio 1, same loss and gradient; TRL and verl do the
same). KL metric and rollout-correction weights are then computed per micro-batch from
those. Where any condition fails it recomputes (and logs why). `recompute` always runs the
pass; `rollout` takes the engine's behaviour log-probs μ as π_old (verl's bypass mode): the
clipped ratio π/μ then covers the train/inference mismatch itself, so no rollout-correction
weights are applied on top.

Masks: the model's forward attends to every real response token (`response_mask`); all
the rest — advantages, the policy loss, KL, entropy, aggregation, rollout correction, the
critic's loss, lengths and every metric — reads `loss_mask`, the model's own tokens. In a
multi-turn episode it has holes where the environment's observations are, so those tokens
are context, never trained on (their log-probs are not even computed); single-turn samples
have loss_mask = response_mask.

The loop never branches on the algorithm's name: the estimator and the policy loss come
from the registry, `estimator.needs_values` alone decides whether the critic runs, and
`estimator.needs` whether the old-log-prob pass must run before the advantages and also
compute Σ_v π(v)² per token (`sum_pi_squared`, the optimal-token baseline's input, from the
same chunked logits). The batch's `greedy_rewards` (ReMax) are passed as they come.

Simplifications: mini-batches are consecutive slices (no shuffling, so runs are
reproducible and rank counts comparable); advantages are estimated per rank — group ids
must not straddle ranks, and batch-whitened estimators (GAE) whiten over the local batch.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import torch

from meshrl.algos import (
    check_finite,
    clip_rewards,
    get_advantage_estimator,
    get_policy_loss,
    kl_estimate,
    loss_denominator,
    loss_numerator,
    overlong_penalty,
)
from meshrl.algos.batch import RolloutBatch
from meshrl.algos.groups import group_stats
from meshrl.algos.head_plan import plan_head
from meshrl.algos.kl_control import kl_controller
from meshrl.algos.logprobs import response_logprobs, response_stats
from meshrl.algos.masked import masked_mean
from meshrl.algos.options import check_options
from meshrl.algos.resampling import pf_ppo_rows
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.correction import at_level, correct
from meshrl.services.learner.train.critic import clipped_value_loss, response_values
from meshrl.services.learner.train.fsdp import DistContext, set_gradient_sync
from meshrl.services.learner.train.loss_terms import EntropyBonus, kl_term, loss_masks, weighted
from meshrl.services.learner.train.metrics import MetricSums, Timer
from meshrl.services.learner.train.policy import TrainedModel
from meshrl.services.learner.train.transaction import StepTransaction, snapshot_place

log = logging.getLogger("meshrl.learner")


@dataclass
class PreparedBatch(RolloutBatch):
    """A RolloutBatch plus what step 2 computed: all [B, T], selected and split with it."""

    old_logprobs: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    advantages: torch.Tensor | None = None
    returns: torch.Tensor | None = None
    loss_weights: torch.Tensor | None = None  # rollout correction; None = all 1

    @classmethod
    def of(cls, trained: RolloutBatch, **computed) -> PreparedBatch:
        """`trained` (the batch with the loss mask it is trained on) and what step 2 computed for it."""
        return cls(**{f.name: getattr(trained, f.name) for f in dataclasses.fields(RolloutBatch)}, **computed)


class TrainStep:
    """`TrainStep(policy, algo, trainer, critic=...)(batch, step) -> metrics`."""

    def __init__(
        self,
        policy: TrainedModel,
        algo: AlgorithmConfig,
        trainer: TrainerConfig,
        *,
        critic: TrainedModel | None = None,
        dist: DistContext | None = None,
        temperature: float = 1.0,
        max_response_len: int | None = None,
        max_staleness: int | None = None,
    ):
        self.policy, self.algo, self.trainer = policy, algo, trainer
        self.dist = dist or DistContext(device=policy.device)
        self.temperature, self.max_response_len = temperature, max_response_len
        self.estimator = get_advantage_estimator(algo.advantage_estimator)
        self.policy_loss = get_policy_loss(algo.policy_loss)
        check_options("algorithm.loss_options", algo.loss_options, [self.policy_loss])
        # the KL-in-reward and entropy-bonus coefficients: fixed, or adaptive towards their targets
        self.kl_ctrl = kl_controller(algo.kl_ctrl, algo.kl_coef, algo.kl_target, algo.kl_horizon)
        self.entropy_bonus = EntropyBonus(algo)
        self.entropy_ctrl = self.entropy_bonus.ctrl
        self.critic = critic_for(self.estimator, algo.advantage_estimator, critic)
        self.needs = getattr(self.estimator, "needs", frozenset())
        self.old_source, reason = self.old_logprobs_plan(max_staleness)
        self.forward, self.head = self.forward_plan()
        plans = (self.old_source, reason, self.forward, self.head.why)
        log.info("old log-probs: %s (%s); model forward: %s; LM head: %s", *plans)

    def old_logprobs_plan(self, max_staleness: int | None) -> tuple[str, str]:
        """(where π_old comes from, why); refused when the estimator's Σπ² would be skipped with it."""
        source, reason = old_logprobs_source(self.trainer, self.algo, max_staleness, self.needs)
        if "sum_pi_squared" in self.needs and source != "recompute":
            raise ValueError(
                f"algorithm.advantage_estimator={self.algo.advantage_estimator!r} needs Σπ² "
                f"from the learner's old-log-prob pass, which "
                f"trainer.old_logprobs={self.trainer.old_logprobs} skips; set "
                f"trainer.old_logprobs=auto or recompute"
            )
        return source, reason

    def forward_plan(self):
        """(the model forward's layout, the LM head's plan) for this trainer on this device."""
        # auto = padded: shared_prefix and packed cost more CPU-seconds on a small CPU host
        # (docs/benchmarks.md, "Training step"); they stay opt-in
        forward = "padded" if self.trainer.forward == "auto" else self.trainer.forward
        head = plan_head(
            self.trainer.lm_head,
            self.trainer.lm_head_chunk,
            self.trainer.lm_head_memory,
            self.dist.device,
            entropy_in_loss=self.entropy_bonus.active,
        )
        return forward, head

    @property
    def head_args(self) -> dict:
        return {"chunk_elements": self.head.chunk_elements, "head_kernel": self.head.kernel}

    @property
    def norm_len(self) -> float | None:
        """seq-mean-token-sum-norm's constant: the configured maximum response length."""
        return float(self.max_response_len) if self.max_response_len else None

    @property
    def trained(self) -> list[TrainedModel]:
        return [m for m in (self.policy, self.critic) if m is not None]

    def __call__(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        """One step, all or nothing (`meshrl.services.learner.train.transaction`)."""
        timer, sums = Timer(self.dist.device), MetricSums()
        updates = self.trainer.ppo_epochs * min(self.trainer.mini_batches, len(batch))
        place = snapshot_place(self.trainer.rollback, updates)
        with StepTransaction(self.trained, place, self.kl_ctrl, self.entropy_ctrl) as tx:
            with timer("step"):
                batch = batch.to(self.dist.device)
                self.check_inputs(batch, step)
                prepared = self.prepare(batch, step, timer, sums)
                for _ in range(self.trainer.ppo_epochs):
                    for mini in prepared.chunk(min(self.trainer.mini_batches, len(prepared))):
                        with timer("optimizer"):
                            tx.apply_pending()  # the previous update, before this forward
                        self.update(mini, step, timer, tx, sums)
            metrics = sums.reduce(self.dist, updates)
            with timer("optimizer"):
                tx.apply_pending()  # the last update: nothing after it can fail
        metrics.update(timer.as_metrics(), lr=self.policy.lr)
        for trained in self.trained:
            trained.scheduler.step()
        return metrics

    # ---- 1. inputs -------------------------------------------------------------------
    def check_inputs(self, batch: RolloutBatch, step: int) -> None:
        """Non-finite inputs raise naming step and groups; a KL needs reference log-probs."""
        check_finite("rewards", batch.rewards, batch.group_ids, step)
        check_finite("behaviour_logprobs", batch.behaviour_logprobs, batch.group_ids, step)
        check_finite("ref_logprobs", batch.ref_logprobs, batch.group_ids, step)
        check_finite("turn_rewards", batch.turn_rewards, batch.group_ids, step)
        if self.algo.kl_coef > 0 and batch.ref_logprobs is None:
            raise ValueError(
                f"algorithm.kl_coef={self.algo.kl_coef} needs batch.ref_logprobs "
                f"(the reference service's per-token log-probs); enable the "
                f"reference or set algorithm.kl_coef=0"
            )
        if self.old_source == "rollout" and batch.behaviour_logprobs is None:
            raise ValueError(
                "trainer.old_logprobs=rollout needs batch.behaviour_logprobs (the "
                "rollout engine's per-token log-probs); have the rollout return "
                "them or set trainer.old_logprobs=auto"
            )

    # ---- 2. prepare (no grad) --------------------------------------------------------
    def prepare(self, batch: RolloutBatch, step: int, timer: Timer, sums: MetricSums) -> PreparedBatch:
        """Step 2 (module docstring): π_old and V_old, rewards, rollout correction, advantages."""
        with timer("old_logprobs"), torch.no_grad():
            old, old_values, sum_pi_squared = self.old_pass(batch)
        if old is not None:
            check_finite("old_logprobs", old, batch.group_ids, step)
        with timer("algo"):
            rewards, token_rewards = self.credited_rewards(batch, self.kl_reward_penalty(batch, old, sums))
            weights, kept = self.correction(batch, old, sums) if self.old_source == "recompute" else (None, None)
            trained = batch if kept is None else dataclasses.replace(batch, loss_mask=kept)
            result = self.estimate(
                trained,
                step,
                rewards=rewards,
                token_rewards=token_rewards,
                values=old_values,
                old_logprobs=old,
                sum_pi_squared=sum_pi_squared,
                rollout_weights=weights,
            )
        self.batch_metrics(batch, result.advantages, trained.loss_mask, sums)
        prepared = PreparedBatch.of(
            trained,
            old_logprobs=old,
            old_values=old_values,
            advantages=result.advantages,
            returns=result.returns,
            loss_weights=at_level(weights, trained.loss_mask, self.policy_loss),
        )
        return self.resampled(prepared, self.shaped_rewards(batch), step, sums)

    def old_pass(self, batch: RolloutBatch):
        """(π_old or None, V_old or None, Σπ² or None), under the weights before the update."""
        old = sum_pi_squared = None
        if self.old_source == "recompute":
            old, sum_pi_squared = self.recompute_logprobs(batch)
        elif self.old_source == "rollout":
            old = batch.behaviour_logprobs
        old_values = self.recompute_values(batch) if self.critic is not None else None
        return old, old_values, sum_pi_squared

    def estimate(self, trained: RolloutBatch, step: int, **computed):
        """The registered estimator's advantages and returns over the trained tokens; every
        estimator is offered the same inputs and reads those it needs."""
        return self.estimator(
            response_mask=trained.loss_mask,
            group_ids=trained.group_ids,
            gamma=self.algo.gamma,
            lam=self.algo.lam,
            norm_by_std=self.algo.norm_adv_by_std_in_grpo,
            eps=self.algo.adv_epsilon,
            scale_rewards=self.algo.scale_rewards,
            normalize_advantages=self.algo.normalize_advantages,
            step=step,
            reward_components=trained.reward_components,
            reward_component_weights=trained.reward_component_weights,
            greedy_rewards=trained.greedy_rewards,
            **computed,
        )

    def resampled(self, prepared: PreparedBatch, scores, step: int, sums: MetricSums) -> PreparedBatch:
        """PF-PPO (`algorithm.pf_ppo`): the rows redrawn by reward, reproducibly per seed, step
        and rank; each rank redraws its own rows (advantages are per rank too)."""
        pf = self.algo.pf_ppo
        if not pf.enabled:
            return prepared
        seed = (self.trainer.seed * 1_000_003 + step) * 1_009 + self.dist.rank
        rows = pf_ppo_rows(scores, pf.reweight_method, torch.Generator().manual_seed(seed), weight_pow=pf.weight_pow)
        sums.mean("pf_ppo/unique_frac", rows.unique().numel() / len(rows), len(rows))
        return prepared.select(rows)

    def recompute_logprobs(self, batch: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(π_old, Σπ² or None): the current weights' log-probs, micro-batch by micro-batch;
        Σπ² only when the estimator declares it needs it."""
        with_spq = "sum_pi_squared" in self.needs
        parts = []
        for micro in batch.split(self.trainer.micro_batch_size):
            with self.policy.autocast():
                parts.append(
                    response_stats(
                        self.policy.model,
                        micro,
                        forward=self.forward,
                        temperature=self.temperature,
                        with_sum_pi_squared=with_spq,
                        **self.head_args,
                    )
                )
        old = torch.cat([p.logprobs for p in parts])
        return old, torch.cat([p.sum_pi_squared for p in parts]) if with_spq else None

    def recompute_values(self, batch: RolloutBatch) -> torch.Tensor:
        parts = []
        for micro in batch.split(self.trainer.micro_batch_size):
            with self.critic.autocast():
                parts.append(response_values(self.critic.model, micro))
        return torch.cat(parts)

    def kl_reward_penalty(self, batch, old: torch.Tensor | None, sums: MetricSums) -> torch.Tensor | None:
        """Reports `kl` = mean k(π_old, π_ref); returns −kl_coef·k when `kl_in: reward`."""
        if batch.ref_logprobs is None or old is None:
            return None
        kl = kl_estimate(old, batch.ref_logprobs, self.algo.kl_estimator, batch.loss_mask)
        sums.mean("kl", masked_mean(kl, batch.loss_mask), batch.loss_mask.sum())
        if self.algo.kl_in != "reward" or self.algo.kl_coef == 0:
            return None
        coef = self.kl_ctrl.value  # this batch pays the coefficient from before the update
        # verl's current_kl: mean over sequences of their token-mean KL, over every rank's rows
        # (all ranks must keep the same coefficient)
        per_sequence = masked_mean(kl, batch.loss_mask, dim=-1)
        total = self.dist.all_reduce(
            torch.stack([per_sequence.sum(), per_sequence.new_tensor(float(len(per_sequence)))])
        )
        self.kl_ctrl.update(float(total[0] / total[1].clamp_min(1.0)), int(total[1].item()))
        sums.mean("kl_coef", kl.new_tensor(coef), 1.0)
        return -coef * kl

    def shaped_rewards(self, batch: RolloutBatch) -> torch.Tensor:
        """Task reward plus DAPO's soft overlong penalty when enabled, clipped into
        `reward_clip_range` when set."""
        overlong, rewards = self.algo.overlong, batch.rewards
        if overlong.enabled:
            max_tokens = self.max_response_len or batch.response_len
            rewards = rewards + overlong_penalty(
                batch.response_lengths(), max_tokens, overlong.buffer_len, overlong.penalty_factor
            )
        return clip_rewards(rewards, self.algo.reward_clip_range)

    def credited_rewards(self, batch: RolloutBatch, kl_tokens: torch.Tensor | None):
        """(per-episode rewards, per-token rewards or None) for the estimator: the (shaped)
        reward, less the environment's turn rewards, which go in per token at the turns that
        earned them (services/learner/turn_credit.py), beside any KL penalty."""
        rewards, turns = self.shaped_rewards(batch), batch.turn_rewards
        if turns is None:
            return rewards, kl_tokens
        turns = turns * batch.loss_mask
        return rewards - turns.sum(dim=-1), turns if kl_tokens is None else kl_tokens + turns

    def correction(self, batch, old: torch.Tensor, sums: MetricSums):
        """(rollout-correction token weights or None, the loss mask less rejected tokens or None)."""
        return correct(self.algo.rollout_correction, batch, old, self.dist, sums)

    def batch_metrics(
        self, batch: RolloutBatch, advantages: torch.Tensor, mask: torch.Tensor, sums: MetricSums
    ) -> None:
        """reward, reward_std (mean per-group std), frac_reward_zero_std, lengths, advantages
        (over `mask`, the trained tokens); reward_greedy (mean over rows) when the batch
        carries greedy rewards (ReMax)."""
        n = batch.batch_size
        stats = group_stats(batch.rewards, batch.group_ids)
        lengths = batch.response_lengths()
        sums.mean("reward", batch.rewards.mean(), n)
        if batch.greedy_rewards is not None:
            sums.mean("reward_greedy", batch.greedy_rewards.mean(), n)
        sums.mean("reward_std", stats.std.mean(), n)
        sums.mean("frac_reward_zero_std", stats.all_equal.float().mean(), n)
        sums.mean("completions/mean_length", lengths.mean(), n)
        sums.extreme("completions/min_length", lengths.min(), "min")
        sums.extreme("completions/max_length", lengths.max(), "max")
        sums.mean("advantages/mean", masked_mean(advantages, mask), mask.sum())

    # ---- 3. update ---------------------------------------------------------------------
    def update(self, mini: PreparedBatch, step: int, timer: Timer, tx: StepTransaction, sums: MetricSums) -> None:
        """One optimizer step over a mini-batch, accumulating over its micro-batches; the
        step itself is left pending in `tx`."""
        denominator = self.dist.all_reduce(loss_denominator(mini.loss_mask, self.algo.loss_agg_mode, self.norm_len))
        scale = self.dist.world_size / denominator.clamp_min(1e-8)
        micros = mini.split(self.trainer.micro_batch_size)
        for i, micro in enumerate(micros):
            for trained in (self.policy, self.critic):
                if trained is not None:
                    set_gradient_sync(trained.model, i == len(micros) - 1)
            self.policy_micro_batch(micro, scale, step, timer, sums)
            if self.critic is not None:
                self.critic_micro_batch(micro, scale, step, timer, sums)
        self.entropy_bonus.end_update(self.dist, sums)
        with timer("optimizer"):
            sums.mean("grad_norm", self.policy.clip_gradients("policy", step), 1.0)
            if self.critic is not None:
                sums.mean("critic/grad_norm", self.critic.clip_gradients("critic", step), 1.0)
        for trained in self.trained:
            tx.pending(trained)

    def policy_micro_batch(self, micro: PreparedBatch, scale, step: int, timer: Timer, sums: MetricSums) -> None:
        with timer("forward"), self.policy.autocast():
            out = response_logprobs(
                self.policy.model,
                micro,
                temperature=self.temperature,
                with_entropy=True,
                forward=self.forward,
                **self.head_args,
            )
        with timer("algo"):
            if micro.old_logprobs is None:
                micro = self.current_as_old(micro, out.logprobs, step, sums)
            loss_mat, pg_mat = self.policy_loss_matrix(micro, out.logprobs, out.entropy, step, sums)
            mode, mask = self.algo.loss_agg_mode, micro.loss_mask
            numerator = loss_numerator(loss_mat, mask, mode, self.norm_len)
            pg_numerator = loss_numerator(pg_mat.detach(), mask, mode, self.norm_len)
        with timer("backward"):
            (numerator * scale).backward()
        share = scale / self.dist.world_size  # Σ over micro-batches and ranks = mini-batch loss
        sums.total("loss", numerator.detach() * share)
        sums.total("pg_loss", pg_numerator * share)

    def current_as_old(
        self, micro: PreparedBatch, logprobs: torch.Tensor, step: int, sums: MetricSums
    ) -> PreparedBatch:
        """The skipped pass: π_old = this forward's log-probs, detached; KL metric and weights."""
        old = logprobs.detach()
        check_finite("old_logprobs", old, micro.group_ids, step)
        self.kl_reward_penalty(micro, old, sums)  # the `kl` metric only: kl_in=reward recomputes
        return dataclasses.replace(
            micro,
            old_logprobs=old,
            loss_weights=at_level(self.correction(micro, old, sums)[0], micro.loss_mask, self.policy_loss),
        )

    def policy_loss_matrix(self, micro: PreparedBatch, logprobs, entropy, step, sums):
        """(total per-token loss ℓ, weighted policy-gradient part), both [b, T]
        (services/learner/train/loss_terms.py)."""
        a, mask = self.algo, micro.loss_mask
        folds = getattr(self.policy_loss, "takes_rollout_weights", False)
        pg = self.registered_policy_loss(micro, logprobs, step, folds)
        pg_mask, bonus_mask = loss_masks(a, micro, logprobs, entropy, sums)
        pg_mat = weighted(pg.loss_mat, None if folds else micro.loss_weights, pg_mask)
        loss_mat = pg_mat
        kl = kl_term(a, micro, logprobs, getattr(self.policy_loss, "kl_ratio_level", "token"))
        if kl is not None:
            loss_mat = loss_mat + kl
        bonus = self.entropy_bonus.term(entropy, mask, bonus_mask)
        if bonus is not None:
            loss_mat = loss_mat - bonus
        check_finite("loss", loss_mat, micro.group_ids, step)
        tokens = mask.sum()
        sums.add_dict(pg.metrics, tokens)
        sums.mean("entropy", masked_mean(entropy.detach(), mask), tokens)
        return loss_mat, pg_mat

    def registered_policy_loss(self, micro: PreparedBatch, logprobs, step: int, folds_weights: bool):
        """The registered policy loss on one micro-batch; one that folds the rollout-correction
        weights into itself gets them here, and they are not applied again outside."""
        a = self.algo
        return self.policy_loss(
            logprobs=logprobs,
            old_logprobs=micro.old_logprobs,
            advantages=micro.advantages,
            response_mask=micro.loss_mask,
            epsilon=a.epsilon,
            epsilon_high=a.epsilon_high,
            dual_clip_c=a.dual_clip_c,
            importance_sampling_level=a.importance_sampling_level,
            group_ids=micro.group_ids,
            step=step,
            **({"rollout_weights": micro.loss_weights} if folds_weights else {}),
            **a.loss_options,
        )

    def critic_micro_batch(self, micro: PreparedBatch, scale, step: int, timer: Timer, sums: MetricSums) -> None:
        with timer("forward"), self.critic.autocast():
            values = response_values(self.critic.model, micro)
        with timer("algo"):
            cfg, mask = self.algo.critic, micro.loss_mask
            loss_mat, metrics = clipped_value_loss(values, micro.old_values, micro.returns, mask, cfg.cliprange_value)
            check_finite("critic loss", loss_mat, micro.group_ids, step)
            numerator = loss_numerator(loss_mat, mask, self.algo.loss_agg_mode, self.norm_len)
        with timer("backward"):
            (cfg.vf_coef * numerator * scale).backward()
        sums.add_dict(metrics, mask.sum())
        sums.total("critic/vf_loss", numerator.detach() * scale / self.dist.world_size)


def critic_for(estimator, estimator_name: str, critic: TrainedModel | None) -> TrainedModel | None:
    """The critic when the estimator reads values (refused without one), else None: it is not trained."""
    if not getattr(estimator, "needs_values", False):
        return None
    if critic is None:
        raise ValueError(
            f"algorithm.advantage_estimator={estimator_name!r} needs a "
            f"critic's values: set algorithm.critic.enabled=true (and pass "
            f"critic=build_critic(...)) or pick an estimator without values"
        )
    return critic


def old_logprobs_source(
    trainer: TrainerConfig, algo: AlgorithmConfig, max_staleness: int | None, needs=frozenset()
) -> tuple[str, str]:
    """("current" | "recompute" | "rollout", why) for `trainer.old_logprobs` (module docstring);
    `needs`: the estimator's declared extra inputs."""
    if trainer.old_logprobs != "auto":
        return trainer.old_logprobs, f"trainer.old_logprobs={trainer.old_logprobs}"
    blockers = []
    if max_staleness != 0:
        blockers.append(f"max_staleness={max_staleness} (samples may come from older weights)")
    if trainer.ppo_epochs != 1 or trainer.mini_batches != 1:
        blockers.append(
            f"{trainer.ppo_epochs} epochs x {trainer.mini_batches} mini-batches "
            f"(more than one optimizer step per batch)"
        )
    if algo.kl_in == "reward" and algo.kl_coef > 0:
        blockers.append("kl_in=reward (the reward's KL needs π_old before the forward)")
    if needs & {"old_logprobs", "sum_pi_squared"}:
        blockers.append(f"the advantage estimator needs {', '.join(sorted(needs))} before the forward")
    rc = algo.rollout_correction
    if rc.reject or rc.batch_normalize:
        blockers.append("rollout_correction.reject / batch_normalize (they need every token's π_old before the update)")
    if blockers:
        return "recompute", "recomputed: " + "; ".join(blockers)
    return "current", "pass skipped: on-policy, one optimizer step per batch, old = current"
