"""The names the config may give to a registered part, known without importing torch.

The parts themselves live in `meshrl.algos` (torch) and `meshrl.services.reward` (a service
the config must not import), so a config is checked at load time against these lists:
`meshrl train --dry-run`, `meshrl doctor` and `meshrl train` refuse a typo before anything
starts. `tests/unit/config/test_parts.py` checks every list equals its registry, so a part
registered without being named here fails CI, not a run.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

# advantage estimator → whether it needs a critic's values (`needs_values=` at registration)
ADVANTAGE_ESTIMATORS = {"gae": True, "grpo": False, "dr_grpo": False, "rloo": False,
                        "reinforce_plus_plus": False, "reinforce_plus_plus_baseline": False,
                        "none": False, "opo": False, "gpg": False, "grpo_passk": False,
                        "gdpo": False, "remax": False, "optimal_token_baseline": False}
# advantage estimator → the extra inputs it declares (`needs=` at registration): the
# learner's tasks ask the rollout for a greedy sample when "greedy_rewards" is among them
ESTIMATOR_NEEDS = {"remax": ("greedy_rewards",),
                   "optimal_token_baseline": ("old_logprobs", "sum_pi_squared")}


def estimator_needs(name: str) -> tuple[str, ...]:
    """The extra inputs advantage estimator `name` declares (empty for most)."""
    return ESTIMATOR_NEEDS.get(name, ())
# policy loss → the level of its importance ratio (`algorithm.importance_sampling_level`)
POLICY_LOSSES = {"ppo": "token", "cispo": "token", "gspo": "sequence", "gpg": "token",
                 "sapo": "token", "gmpo": "sequence", "luspo": "sequence", "dppo_tv": "token",
                 "dppo_kl": "token", "clip_cov": "token", "kl_cov": "token", "dro": "token"}
# the options `algorithm.loss_options` may set, per policy / preference loss: each part's
# keyword defaults less those with a config key of their own (DEDICATED_OPTION_KEYS);
# tests/unit/algos/test_algos_option_lists.py keeps this equal to the registries
LOSS_OPTIONS = {
    "cispo": (), "clip_cov": ("clip_cov_ratio", "clip_cov_lb", "clip_cov_ub"),
    "dppo_kl": ("dppo_ratio_cap",), "dppo_tv": ("dppo_ratio_cap",), "dro": ("dro_beta",),
    "gmpo": (), "gpg": (), "gspo": ("delta", "seq_log_ratio_cap"),
    "kl_cov": ("kl_cov_ratio", "kl_cov_coef"), "luspo": ("delta", "seq_log_ratio_cap"),
    "ppo": ("delta",), "sapo": ("tau_pos", "tau_neg"),
    "aot": ("label_smoothing",), "aot_unpaired": ("label_smoothing",), "apo_down": (),
    "apo_zero": (), "bco_pair": (), "discopop": ("discopop_tau", "f_divergence", "f_alpha"),
    "exo_pair": ("label_smoothing", "f_divergence", "f_alpha"),
    "hinge": ("f_divergence", "f_alpha"), "ipo": (), "nca_pair": (),
    "robust": ("label_smoothing", "f_divergence", "f_alpha"),
    "sigmoid": ("label_smoothing", "f_divergence", "f_alpha"), "sigmoid_norm": (),
    "sppo_hard": (),
}
DEDICATED_OPTION_KEYS = {
    "epsilon": "algorithm.epsilon", "epsilon_high": "algorithm.epsilon_high",
    "dual_clip_c": "algorithm.dual_clip_c", "norm_by_std": "algorithm.norm_adv_by_std_in_grpo",
    "eps": "algorithm.adv_epsilon", "scale_rewards": "algorithm.scale_rewards",
    "normalize_advantages": "algorithm.normalize_advantages", "gamma": "algorithm.gamma",
    "lam": "algorithm.lam",
}
# the offline preference loss (`algorithm.offline: true`, kind from `algorithm.dpo_loss_type`):
# not a registered policy loss, the offline learner computes it (`meshrl.algos.dpo`)
OFFLINE_POLICY_LOSS = "dpo"
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean",
                  "seq-mean-token-sum-norm", "token-sum")
# `k1+`/`k3+`: value of k1/k3, gradient of k2 (straight-through, verl's names)
KL_ESTIMATORS = ("abs", "k1", "k1+", "k2", "k3", "k3+", "mse")
# preference losses (`@register_preference_loss` in meshrl/algos/preference), TRL's names
DPO_LOSS_TYPES = ("aot", "aot_unpaired", "apo_down", "apo_zero", "bco_pair", "discopop",
                  "exo_pair", "hinge", "ipo", "nca_pair", "robust", "sigmoid", "sigmoid_norm",
                  "sppo_hard")
# built-in reward rules (`@register_reward` in services/reward/rules), plus a gRPC service
REWARD_RULE_KINDS = ("environment", "exact_match", "length_penalty", "math_verify", "regex")
# `kind: environment`: the episode's environment reward; `params.credit` where the learner
# puts each turn's reward (services/reward/rules/environment.py, docs/trajectories.md)
ENVIRONMENT_REWARD_KIND = "environment"
ENVIRONMENT_CREDITS = ("turn", "episode")


def turn_credited_components(components) -> tuple[str, ...]:
    """Names of the `environment` components whose turn rewards the learner credits per turn
    (`params.credit: turn`, the default)."""
    return tuple(c.name for c in components if c.kind == ENVIRONMENT_REWARD_KIND
                 and c.params.get("credit", "turn") == "turn")
EXTERNAL_REWARD_KIND = "external"
# the learned reward model (meshrl/config/reward_model.py): an external service that
# `meshrl train` starts itself from the run's `reward_model` section
REWARD_MODEL_KIND = "reward_model"
# tool-call formats of multi-turn rollouts (`@register_tool_parser` in services/rollout/agent/parsers)
TOOL_PARSERS = ("hermes",)


def unknown_name(key: str, value: str, allowed: Iterable[str], what: str) -> str:
    """The message for a name that is not registered: the valid ones and the closest."""
    names = sorted(allowed)
    close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else "."
    return f"{key}={value!r} is not a known {what}{hint} Valid: {', '.join(names)}"


def check_name(key: str, value: str, allowed: Iterable[str], what: str) -> str:
    """`value` when it is one of `allowed`; else ValueError with `unknown_name`'s message."""
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(unknown_name(key, value, allowed, what))
    return value
