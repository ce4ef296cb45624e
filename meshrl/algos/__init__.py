"""meshrl.algos — the algorithm parts, as pure tensor math.

Two pluggable parts per training step, looked up by name from the config:

- advantage estimators (`get_advantage_estimator(name)`): `gae`, `grpo`, `dr_grpo`, `rloo`,
  `reinforce_plus_plus`, `opo`, `gpg`, `grpo_passk`, `gdpo`, `remax`, ... ;
- policy losses (`get_policy_loss(name)`): `ppo`, `gspo`, `cispo`, `sapo`, `gmpo`, `dppo_tv`,
  `clip_cov`, `luspo`, `dro`, ... (`meshrl algos` prints every part, its options and paper);

plus shared parts: `kl_estimate` (k1, k2, k3, abs, mse, k1+, k3+), `kl_control` (adaptive
KL), `aggregate_loss` and its micro-batch pieces `loss_numerator` / `loss_denominator`, `dpo_loss`, `rollout_correction`,
`overlong_penalty`, `clip_rewards`, `groups_with_signal`, and the checks `check_finite` / `check_shapes`;
preference losses for the offline path (`get_preference_loss(name)`, `dpo_loss`).

Tensors are [batch, response_len] with a 0/1 float `response_mask`; `group_ids` is int64
[batch]. Add a part with `@register_advantage_estimator("name")` or
`@register_policy_loss("name")` in any imported module; nothing else changes.
"""

from meshrl.algos import advantages as _advantages  # noqa: F401  (registers estimators)
from meshrl.algos import losses as _losses  # noqa: F401  (registers policy losses)
from meshrl.algos.aggregation import AGG_MODES, aggregate_loss, list_agg_modes, loss_denominator, loss_numerator
from meshrl.algos.checks import NonFiniteError, ShapeError, check_finite, check_shapes
from meshrl.algos.dpo import dpo_loss, list_dpo_kinds
from meshrl.algos.kl import K3_LOG_RATIO_BOUND, kl_estimate, list_kl_estimators
from meshrl.algos.registry import (
    UnknownNameError,
    get_advantage_estimator,
    get_policy_loss,
    get_preference_loss,
    list_advantage_estimators,
    list_policy_losses,
    list_preference_losses,
    register_advantage_estimator,
    register_policy_loss,
    register_preference_loss,
)
from meshrl.algos.rollout_correction import ROLLOUT_CORRECTION_MODES, rollout_correction
from meshrl.algos.shaping import clip_rewards, groups_with_signal, overlong_penalty
from meshrl.algos.types import AdvantageResult, PolicyLossResult

__all__ = [
    "AGG_MODES",
    "AdvantageResult",
    "K3_LOG_RATIO_BOUND",
    "NonFiniteError",
    "PolicyLossResult",
    "ROLLOUT_CORRECTION_MODES",
    "ShapeError",
    "UnknownNameError",
    "aggregate_loss",
    "check_finite",
    "check_shapes",
    "dpo_loss",
    "get_advantage_estimator",
    "get_policy_loss",
    "get_preference_loss",
    "list_preference_losses",
    "register_preference_loss",
    "groups_with_signal",
    "kl_estimate",
    "list_advantage_estimators",
    "list_agg_modes",
    "list_dpo_kinds",
    "list_kl_estimators",
    "list_policy_losses",
    "loss_denominator",
    "loss_numerator",
    "clip_rewards",
    "overlong_penalty",
    "register_advantage_estimator",
    "register_policy_loss",
    "rollout_correction",
]
