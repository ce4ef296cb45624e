"""Test-only copies of TRL 1.16.0's and verl 0.9.1's pure-torch functions, to put the libraries'
own numbers beside meshrl's (tests/unit/algos/test_algos_library_crosscheck.py). Never
imported by meshrl itself.

Copied from the PyPI wheels trl-1.16.0 (trl/trainer/grpo_trainer.py, rloo_trainer.py,
utils.py's nanstd) and verl-0.9.1
(verl/trainer/ppo/core_algos.py, verl/trainer/ppo/rollout_corr_helper.py). Both:

    Copyright 2020-2026 The HuggingFace Team. / Copyright 2024-2025 Bytedance Ltd. and/or its affiliates
    Licensed under the Apache License, Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0);
    distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND.

Changes: methods became functions; verl_F.masked_mean / masked_sum are the small helpers
below (verl's own formulas); the metrics, the accelerator gather (one process here), the
DataProto wrapping and the threshold-string parsing were left out; code otherwise as shipped.
"""

import math
from typing import Optional

import torch


# ---- verl.utils.torch_functional ----------------------------------------------------------
def masked_sum(values, mask, axis=None):
    return (values * mask).sum(axis=axis) if axis is not None else (values * mask).sum()


def masked_mean(values, mask, axis=None):
    s = masked_sum(values, mask, axis)
    return s / (mask.sum(axis=axis) + 1e-8) if axis is not None else s / (mask.sum() + 1e-8)


# ---- TRL 1.16.0, GRPOTrainer ---------------------------------------------------------------
@torch.no_grad()
def trl_gamma_weights(
    advantages,
    log_ratio_per_token,
    mask,
    importance_sampling_ratio,
    k_pos=2.0,
    lambda_pos=3.0,
    k_neg=3.0,
    lambda_neg=2.0,
):
    lower_clamp = math.log(1e-8)
    log_ratio_clamped = torch.clamp(log_ratio_per_token, -20.0, 20.0)
    seq_log_ratio = torch.sum(log_ratio_clamped * mask, dim=-1, keepdim=True)  # (B, 1)
    if importance_sampling_ratio is not None:
        log_is_ratio = torch.clamp(torch.log(importance_sampling_ratio), lower_clamp, 20.0)
        seq_log_ratio += torch.sum(log_is_ratio, dim=-1, keepdim=True)
    log_w_seq = torch.clamp(seq_log_ratio, lower_clamp, 20.0)
    w_seq = torch.exp(log_w_seq)
    is_nonneg_adv = advantages >= 0
    k_seq = torch.where(is_nonneg_adv, k_pos, k_neg)
    lambda_seq = torch.where(is_nonneg_adv, lambda_pos, lambda_neg).clamp(min=1e-4)
    log_phi = lambda_seq + k_seq * log_w_seq - lambda_seq * w_seq
    phi_seq = torch.exp(log_phi).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
    return phi_seq  # (B, 1)


def trl_off_policy_mask(advantages, per_token_logps, sampling_per_token_logps, mask, off_policy_threshold):
    kl_div = sampling_per_token_logps - per_token_logps.detach()
    kl_div = torch.nan_to_num(kl_div, nan=0.0)
    seq_kl_sum = (kl_div * mask).sum(dim=1, keepdim=True)
    avg_seq_kl = seq_kl_sum / mask.sum(dim=1, keepdim=True).clamp(min=1.0)
    is_pos_adv = advantages >= 0
    is_low_kl = avg_seq_kl <= off_policy_threshold
    return (is_pos_adv | is_low_kl).to(dtype=mask.dtype)  # (B, 1)


def trl_high_entropy_mask(entropies, mask, threshold):
    gathered = entropies[mask.bool()].float()  # one process: the gather is the identity
    if gathered.numel() == 0:
        return torch.zeros_like(entropies, dtype=torch.bool)
    entropy_threshold = torch.quantile(gathered, threshold)
    masked_entropies = entropies * mask.float()
    entropy_mask = masked_entropies >= entropy_threshold
    return entropy_mask & mask.bool()


def trl_bias_corrected_kl(
    per_token_logps, old_per_token_logps, ref_per_token_logps, mask, importance_sampling_level="token"
):
    log_ratio = per_token_logps - old_per_token_logps
    if importance_sampling_level == "token":
        log_importance_weights = log_ratio
    else:
        log_importance_weights = (log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        log_importance_weights = log_importance_weights.unsqueeze(-1)
    coef_1 = torch.exp(log_importance_weights)
    per_token_kl = torch.exp(ref_per_token_logps - per_token_logps) - (ref_per_token_logps - per_token_logps) - 1
    return per_token_kl * coef_1


def trl_nanstd(tensor, dim=None, keepdim=False):
    mean = torch.nanmean(tensor, dim=dim, keepdim=True)
    variance = torch.nanmean((tensor - mean) ** 2, dim=dim, keepdim=True)
    count = torch.sum(~torch.isnan(tensor), dim=dim, keepdim=True)
    correction = count / (count - 1)
    correction = torch.where(count > 1, correction, torch.full_like(correction, float("nan")))
    variance *= correction
    std = torch.sqrt(variance)
    if keepdim:
        return std
    if dim is None:
        return std.squeeze()
    return std.squeeze(dim)


def trl_normalize_then_sum(rewards_per_func, reward_weights, num_generations):
    """GRPOTrainer._generate_and_score_completions, multi_objective_aggregation="normalize_then_sum"."""
    grouped = rewards_per_func.view(-1, num_generations, rewards_per_func.shape[1])
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = trl_nanstd(grouped, dim=1, keepdim=True) if num_generations > 1 else torch.zeros_like(mean_k)
    reward_k = (grouped - mean_k) / (std_k + 1e-4)
    reward_k = reward_k.view(-1, rewards_per_func.shape[1])
    rewards = (reward_k * reward_weights.unsqueeze(0)).nansum(dim=1)
    std_rewards = trl_nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
    advantages = (rewards - torch.nanmean(rewards)) / (std_rewards + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


def trl_rloo_advantages(
    rewards, old_per_token_logps, ref_per_token_logps, completion_mask, num_generations, beta,
    reward_clip_range=None, normalize_advantages=False,
):  # fmt: skip
    """RLOOTrainer._generate_and_score_completions: clip, KL in the reward, leave-one-out."""
    if reward_clip_range:
        rewards = rewards.clamp(min=reward_clip_range[0], max=reward_clip_range[1])
    if beta != 0.0:
        per_token_kl = old_per_token_logps - ref_per_token_logps
        kl = (per_token_kl * completion_mask).sum(-1)
        rewards = rewards - beta * kl
    grouped_rewards = rewards.view(-1, num_generations)
    scorable_counts = (~torch.isnan(grouped_rewards)).sum(dim=1, keepdim=True)
    grouped_sum = torch.nansum(grouped_rewards, dim=1, keepdim=True)
    baselines = (grouped_sum - grouped_rewards) / (scorable_counts - 1)
    advantages = rewards - baselines.view(-1)
    if normalize_advantages:
        advantages = (advantages - torch.nanmean(advantages)) / (trl_nanstd(advantages) + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


# ---- verl 0.9.1, core_algos.py -------------------------------------------------------------
def verl_kl_penalty_forward(logprob, ref_logprob, kl_penalty):
    if kl_penalty in ("kl", "k1"):
        return logprob - ref_logprob
    if kl_penalty == "abs":
        return (logprob - ref_logprob).abs()
    if kl_penalty in ("mse", "k2"):
        return 0.5 * (logprob - ref_logprob).square()
    if kl_penalty in ("low_var_kl", "k3"):
        kl = ref_logprob - logprob
        kl = torch.clamp(kl, min=-20, max=20)
        ratio = torch.exp(kl)
        kld = (ratio - kl - 1).contiguous()
        return torch.clamp(kld, min=-10, max=10)
    raise NotImplementedError


def verl_kl_penalty(logprob, ref_logprob, kl_penalty):
    base_kl_penalty = kl_penalty[:-1] if kl_penalty.endswith("+") else kl_penalty
    forward_score = verl_kl_penalty_forward(logprob, ref_logprob, base_kl_penalty)
    if not kl_penalty.endswith("+") or kl_penalty in ("mse", "k2"):
        return forward_score
    backward_score = 0.5 * (logprob - ref_logprob).square()
    return backward_score - backward_score.detach() + forward_score.detach()


def verl_vf_clipfrac(vpreds, returns, values, response_mask, cliprange_value):
    vpredclipped = torch.max(torch.min(vpreds, values + cliprange_value), values - cliprange_value)
    vf_losses1 = (vpreds - returns) ** 2
    vf_losses2 = (vpredclipped - returns) ** 2
    return masked_mean(torch.gt(vf_losses2, vf_losses1).float(), response_mask)


def verl_geo_mean_seq_is_weights(rollout_is_weights, response_mask):
    response_mask_sum = response_mask.sum(dim=-1)
    return torch.exp((torch.log(rollout_is_weights + 1e-10) * response_mask).sum(dim=-1) / (response_mask_sum + 1e-8))


# ---- verl 0.9.1, rollout_corr_helper.py ----------------------------------------------------
SAFETY_BOUND = 20.0


def verl_is_weights(
    log_ratio, response_mask, rollout_is="token", upper=2.0, lower: Optional[float] = None, batch_normalize=False
):
    """compute_rollout_correction_weights: `upper` alone = TIS, with `lower` = IcePop."""
    if rollout_is == "token":
        raw = torch.exp(torch.clamp(log_ratio, min=-SAFETY_BOUND, max=SAFETY_BOUND))
    else:
        log_ratio_sum = masked_sum(log_ratio, response_mask, axis=-1).unsqueeze(-1)
        raw = torch.exp(torch.clamp(log_ratio_sum, min=-SAFETY_BOUND, max=SAFETY_BOUND)).expand_as(log_ratio)
    raw = raw * response_mask
    if lower is None:
        weights = raw.clamp(max=upper)
    else:
        kept = (raw >= lower) & (raw <= upper)
        weights = torch.where(kept, raw, torch.zeros_like(raw))
    weights = weights.detach()
    if batch_normalize:
        if rollout_is == "token":
            weights_mean = masked_mean(weights, response_mask)
        else:
            seq_weights = masked_mean(weights, response_mask, axis=-1)
            seq_mask = (response_mask.sum(dim=-1) > 0).to(dtype=weights.dtype)
            weights_mean = (seq_weights * seq_mask).sum() / seq_mask.sum().clamp_min(1e-8)
        if weights_mean > 1e-8:
            weights = weights / weights_mean
    return weights


def verl_rejection_mask(log_ratio, response_mask, option, lower=None, upper=None):
    """compute_rollout_rejection_mask for one option: thresholds already parsed (k1 options:
    ratio bounds `lower`, `upper`; the others: `upper`)."""
    log_ratio_safe = torch.clamp(log_ratio, min=-SAFETY_BOUND, max=SAFETY_BOUND)
    token_k1 = -log_ratio_safe
    token_k2 = 0.5 * log_ratio_safe**2
    token_k3 = torch.exp(log_ratio_safe) - 1.0 - log_ratio_safe
    stats = {"k1": token_k1, "k2": token_k2, "k3": token_k3}

    def _sequence_max(values):
        mask_bool = response_mask.bool()
        neg_inf = torch.tensor(float("-inf"), device=values.device, dtype=values.dtype)
        max_values = values.masked_fill(~mask_bool, neg_inf).max(dim=-1).values
        return torch.where(max_values == neg_inf, torch.zeros_like(max_values), max_values)

    kind = option[-2:]
    if option.startswith("token"):
        stat = stats[kind]
    elif option.startswith("seq_sum"):
        stat = masked_sum(stats[kind], response_mask, axis=-1)
    elif option.startswith("seq_mean"):
        stat = masked_mean(stats[kind], response_mask, axis=-1)
    else:
        stat = _sequence_max(stats[kind])
    if kind == "k1":
        keep = (stat >= math.log(lower)) & (stat <= math.log(upper))
    else:
        keep = stat <= upper
    if not option.startswith("token"):
        keep = keep.unsqueeze(-1).expand_as(response_mask.bool())
    return (response_mask * keep.to(dtype=log_ratio.dtype)).to(dtype=response_mask.dtype)


# ---- verl 0.9.1, core_algos.py: the optimal token baselines --------------------------------
def _groups(index, rows):
    from collections import defaultdict

    prompt_groups = defaultdict(list)
    for i in rows:
        prompt_groups[index[i]].append(i)
    return prompt_groups


@torch.no_grad()
def verl_optimal_token_baseline(
    token_level_rewards,
    response_mask,
    index,
    old_log_probs,
    sum_pi_squared,
    rollout_is_weights=None,
    handle_zero_tail=True,
    epsilon=1e-8,
):
    batch_size, seq_len = token_level_rewards.shape
    device = token_level_rewards.device
    returns = (token_level_rewards * response_mask).flip(dims=[-1]).cumsum(dim=-1).flip(dims=[-1])
    pi_t = torch.exp(old_log_probs)
    w_per_timestep = 1 - 2 * pi_t + sum_pi_squared
    if rollout_is_weights is not None:
        w_per_timestep = w_per_timestep * (rollout_is_weights**2)
    w_cumulative = (w_per_timestep * response_mask).cumsum(dim=-1)
    baselines = torch.zeros_like(returns)
    for _, trajectory_indices in _groups(index, range(batch_size)).items():
        N = len(trajectory_indices)
        if N == 1:
            continue
        traj_idx = torch.tensor(trajectory_indices, device=device)
        returns_group = returns[traj_idx]
        w_cumulative_group = w_cumulative[traj_idx]
        mask_group = response_mask[traj_idx]
        numerator = (returns_group * w_cumulative_group * mask_group).sum(dim=0)
        denominator = (w_cumulative_group * mask_group).sum(dim=0) + epsilon
        baseline_per_step = numerator / denominator
        baselines[traj_idx] = baseline_per_step.unsqueeze(0).expand(N, -1)
        if handle_zero_tail:
            response_lengths = mask_group.sum(dim=-1)
            sorted_lengths, _ = torch.sort(response_lengths)
            max_length = int(sorted_lengths[-1].item())
            second_max_length = int(sorted_lengths[-2].item())
            max_length_idx = (response_lengths == max_length).nonzero(as_tuple=True)[0]
            if max_length_idx.numel() == 1 and max_length > second_max_length:
                max_length_traj_idx = trajectory_indices[int(max_length_idx[0])]
                baselines[max_length_traj_idx, second_max_length:] = 0.0
    advantages = (returns - baselines) * response_mask
    return advantages, returns


@torch.no_grad()
def verl_tir_optimal_token_baseline(
    token_level_rewards,
    response_mask,
    index,
    old_log_probs,
    sum_pi_squared,
    rollout_is_weights=None,
    handle_zero_tail=True,
    epsilon=1e-8,
):
    token_returns = (token_level_rewards * response_mask).flip(dims=[-1]).cumsum(dim=-1).flip(dims=[-1])
    pi_t = torch.exp(old_log_probs)
    w_per_timestep = 1 - 2 * pi_t + sum_pi_squared
    if rollout_is_weights is not None:
        w_per_timestep = w_per_timestep * (rollout_is_weights**2)
    w_cumulative = (w_per_timestep * response_mask).cumsum(dim=-1)
    response_lengths = response_mask.sum(dim=-1).to(dtype=torch.long)
    max_response_length = int(response_lengths.max().item()) if response_lengths.numel() > 0 else 0
    all_w_values = w_cumulative.new_zeros((len(response_lengths), max_response_length))
    all_returns = torch.zeros_like(all_w_values)
    for i in range(len(response_lengths)):
        length = int(response_lengths[i].item())
        if length == 0:
            continue
        mask = response_mask[i].bool()
        all_w_values[i, :length] = w_cumulative[i, mask]
        all_returns[i, :length] = token_returns[i, mask]
    rows = [i for i in range(len(response_lengths)) if response_lengths[i] != 0]
    baselines = torch.zeros_like(all_returns)
    for _, trajectory_indices in _groups(index, rows).items():
        N = len(trajectory_indices)
        traj_idx = torch.tensor(trajectory_indices, device=all_returns.device)
        if N == 1:
            baselines[traj_idx[0]] = 0.0
            continue
        w_group = all_w_values[traj_idx]
        R_group = all_returns[traj_idx]
        b_star = (R_group * w_group).sum(dim=0) / (w_group.sum(dim=0) + epsilon)
        baselines[traj_idx] = b_star.to(baselines.dtype)
        if handle_zero_tail:
            response_lengths_group = response_lengths[traj_idx]
            sorted_lengths, _ = torch.sort(response_lengths_group)
            max_length = int(sorted_lengths[-1].item())
            second_max_length = int(sorted_lengths[-2].item())
            max_length_idx = (response_lengths_group == max_length).nonzero(as_tuple=True)[0]
            if max_length_idx.numel() == 1 and max_length > second_max_length:
                max_length_traj_idx = trajectory_indices[int(max_length_idx[0])]
                baselines[max_length_traj_idx, second_max_length:] = 0.0
    all_advantages = all_returns - baselines
    advantages = torch.zeros_like(token_returns)
    for i in range(len(response_lengths)):
        if response_lengths[i] == 0:
            continue
        advantages[i, response_mask[i].bool()] = all_advantages[i, : response_lengths[i]]
    advantages = advantages * response_mask
    return advantages, token_returns


# ---- verl 0.9.1, core_algos.py: compute_pf_ppo_reweight_data's draw ------------------------
@torch.no_grad()
def verl_pf_ppo_weights(scores, reweight_method="pow", weight_pow=2.0):
    if reweight_method == "pow":
        weights = torch.pow(torch.abs(scores), weight_pow)
    elif reweight_method == "max_min":
        max_score = torch.max(scores)
        min_score = torch.min(scores)
        weights = torch.where((scores == max_score) | (scores == min_score), 1.0, 0.0)
    elif reweight_method == "max_random":
        max_score = torch.max(scores)
        weights = torch.where(scores == max_score, 0.4, 0.1)
    else:
        raise ValueError(f"Unsupported reweight_method: {reweight_method}")
    return torch.clamp(weights + 1e-8, min=1e-8)


def verl_pf_ppo_rows(scores, reweight_method="pow", weight_pow=2.0, generator=None):
    """The sample_indices of compute_pf_ppo_reweight_data (verl draws from torch's global
    generator; one is passed here so both sides draw the same numbers)."""
    weights = verl_pf_ppo_weights(scores, reweight_method, weight_pow)
    return torch.multinomial(weights, scores.shape[0], replacement=True, generator=generator)
