"""Name → function registries for the pluggable parts of a training step.

    @register_advantage_estimator("my_baseline", needs_values=False)
    def my_baseline(*, rewards, response_mask, group_ids, **_): ...

    @register_policy_loss("my_loss", default_agg="token-mean")
    def my_loss(*, logprobs, old_logprobs, advantages, response_mask, **_): ...

The config names a part (`algorithm.advantage_estimator`, `algorithm.policy_loss`); the
trainer looks it up here, so adding an algorithm never touches the loop. The decorators
attach the declared attributes (`needs_values`, `needs`, `default_agg`, `registered_name`) to the
function and wrap it with the shared input/output checks in `meshrl.algos.validate`.

The decorator is the one declaration: each registry (meshrl/registry.py) imports every file
of its folder, and what each decorator declares for the config (`needs_values`, `needs`,
`level`, options, ...) goes to the parts table the torch-free config reads
(scripts/gen_parts_table.py), so a new file is a new name everywhere. A name may also be an
import path, `package.module:function`: the module is imported on first use and the function
taken as registered by its decorator, or, undecorated, registered under that path with the
decorator's defaults.
"""

from __future__ import annotations

import importlib
from typing import Callable

from meshrl.algos.aggregation import AGG_MODES
from meshrl.algos.options import declared_options
from meshrl.algos.validate import validated_estimator, validated_policy_loss
from meshrl.registry import Registry, UnknownNameError, import_modules


def import_folder(package: str, path) -> None:
    """Import every module of a part folder (a package's `__name__`, `__path__`): importing a
    file runs its decorators, so the folder is the list of its parts."""
    import_modules(package, path)


def import_function(path: str, kind: str) -> Callable:
    """`package.module:function` → the function; UnknownNameError naming what is missing."""
    module, _, attr = path.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr, None)
    except ImportError as err:
        raise UnknownNameError(f"{kind} {path!r}: cannot import {module!r} ({err})") from None
    if not callable(fn):
        raise UnknownNameError(f"{kind} {path!r}: {module} has no function {attr!r}")
    return fn


class PartRegistry(Registry):
    """A registry of algorithm parts: a name may also be `package.module:function`."""

    register: Callable  # the family's decorator, with its declarations' defaults

    def get(self, name: str) -> Callable:
        if ":" in name and name not in self._entries:
            self.add_import_path(name)
        return super().get(name)

    def add_import_path(self, path: str) -> None:
        """Make `package.module:function` a name of this registry (see the module docstring)."""
        fn = import_function(path, self.kind)
        registered = getattr(fn, "registered_name", None)
        if registered is None:
            self.register(path)(fn)
        elif registered in self._entries and self._entries[registered].obj is fn:
            self.add(path, fn)
        else:
            raise UnknownNameError(
                f"{self.kind} {path!r} is registered as another kind of part "
                f"({registered!r}), not with @{self.decorator}"
            )

    def names(self) -> list[str]:
        """The registered names (import paths used so far left out)."""
        return [n for n in super().names() if ":" not in n]


ADVANTAGE_ESTIMATORS = PartRegistry(
    "advantage estimator", decorator="register_advantage_estimator", folder="meshrl.algos.advantages"
)
# the extra inputs an estimator may declare (`needs=`), each delivered by the mesh on demand
ESTIMATOR_INPUTS = {
    "greedy_rewards": "the rollout decodes a greedy response per prompt, the reward scores it",
    "old_logprobs": "the learner runs its old-log-prob pass before the advantages",
    "sum_pi_squared": "that pass also computes Σ_v π(v)² per response token",
}
POLICY_LOSSES = PartRegistry("policy loss", decorator="register_policy_loss", folder="meshrl.algos.losses")
PREFERENCE_LOSSES = PartRegistry(
    "preference loss", decorator="register_preference_loss", folder="meshrl.algos.preference"
)


def register_advantage_estimator(name: str, *, needs_values: bool = False, needs=(), paper: str = ""):
    """Decorator: register `fn` as advantage estimator `name`.

    `needs_values=True` marks estimators that need a critic's `values` [B, T] (GAE); the
    trainer reads `fn.needs_values` to decide whether to run the critic. `needs` names the
    extra inputs it reads (keys of `ESTIMATOR_INPUTS`); the feeder and the trainer read
    `fn.needs` to have them produced and passed. `paper` (title, authors, arXiv id) is
    shown by `meshrl algos`.
    """
    unknown = sorted(set(needs) - set(ESTIMATOR_INPUTS))
    if unknown:
        raise ValueError(
            f"advantage estimator {name!r} needs {unknown}, which the mesh does not "
            f"deliver; known inputs: {', '.join(ESTIMATOR_INPUTS)}"
        )

    def decorate(fn: Callable) -> Callable:
        wrapped = validated_estimator(fn, name=name, needs_values=needs_values)
        wrapped.registered_name, wrapped.needs_values, wrapped.paper = name, needs_values, paper
        wrapped.needs = frozenset(needs)
        return ADVANTAGE_ESTIMATORS.add(
            name, wrapped, needs_values=needs_values, needs=sorted(needs), options=declared_options(fn)
        )

    return decorate


def get_advantage_estimator(name: str) -> Callable:
    """The estimator registered as `name`; `UnknownNameError` (a KeyError) lists the others."""
    return ADVANTAGE_ESTIMATORS.get(name)


def list_advantage_estimators() -> list[str]:
    return ADVANTAGE_ESTIMATORS.names()


def register_policy_loss(
    name: str,
    *,
    default_agg: str = "token-mean",
    paper: str = "",
    level: str = "token",
    takes_rollout_weights: bool = False,
    kl_ratio_level: str | None = None,
):
    """Decorator: register `fn` as policy loss `name`.

    `default_agg`: the paper's loss aggregation (`meshrl.algos.aggregation`; the config's
    `loss_agg_mode` wins). `paper` (title, authors, arXiv id) is shown by `meshrl algos`.
    `level` ("token" or "sequence"): where its importance ratio lives; another
    `importance_sampling_level` is refused. `takes_rollout_weights=True`: the loss folds the
    rollout-correction weights (`rollout_weights=` [B, T] or None) in itself, as VESPO's
    sequence weight does, instead of the loop multiplying its loss by them. `kl_ratio_level`:
    the ratio weighing the KL term under `use_bias_correction_kl` (default `level`; VESPO: token).
    """
    kl_ratio_level = kl_ratio_level or level
    check_policy_loss_declaration(name, default_agg, level, kl_ratio_level)

    def decorate(fn: Callable) -> Callable:
        wrapped = validated_policy_loss(fn, name=name, level=level)
        wrapped.registered_name, wrapped.default_agg, wrapped.paper = name, default_agg, paper
        wrapped.level, wrapped.takes_rollout_weights = level, takes_rollout_weights
        wrapped.kl_ratio_level = kl_ratio_level
        return POLICY_LOSSES.add(name, wrapped, level=level, options=declared_options(fn))

    return decorate


def check_policy_loss_declaration(name: str, default_agg: str, level: str, kl_ratio_level: str) -> None:
    """ValueError naming what `@register_policy_loss(name, ...)` declared that the loop cannot run."""
    for what, value in (("level", level), ("kl_ratio_level", kl_ratio_level)):
        if value not in ("token", "sequence"):
            raise ValueError(f"{what}={value!r} for policy loss {name!r}; expected token or sequence")
    if default_agg not in AGG_MODES:
        raise ValueError(f"default_agg={default_agg!r} for policy loss {name!r} is not one of {', '.join(AGG_MODES)}")


def get_policy_loss(name: str) -> Callable:
    """The policy loss registered as `name`; `UnknownNameError` (a KeyError) lists the others."""
    return POLICY_LOSSES.get(name)


def list_policy_losses() -> list[str]:
    return POLICY_LOSSES.names()


def register_preference_loss(
    name: str, *, paper: str = "", needs_lengths: bool = False, uses_reference: bool = True, per_pair: bool = True
):
    """Decorator: register `fn` as preference loss `name` (the offline DPO path).

    `fn(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected [B] summed log-probs,
    chosen_lengths, rejected_lengths [B] token counts or None, beta, state: dict, **options)`
    returns the per-pair loss [B]. `needs_lengths=True` marks losses on length-averaged
    log-probs (IPO, sigmoid_norm); `state` is a dict kept across steps (BCO's running mean).
    `uses_reference=False` marks a loss that reads no reference log-probs (sft): an
    f-divergence other than reverse KL has nothing to change there, so it need not take one.
    `per_pair=False` marks a loss whose row i is not pair i (aot sorts), which per-pair
    weights (WPO) cannot follow.
    """

    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.paper, fn.needs_lengths = name, paper, needs_lengths
        fn.uses_reference, fn.per_pair = uses_reference, per_pair
        return PREFERENCE_LOSSES.add(
            name, fn, uses_reference=uses_reference, per_pair=per_pair, options=declared_options(fn)
        )

    return decorate


def get_preference_loss(name: str) -> Callable:
    """The preference loss registered as `name`; `UnknownNameError` lists the others."""
    return PREFERENCE_LOSSES.get(name)


def list_preference_losses() -> list[str]:
    return PREFERENCE_LOSSES.names()


ADVANTAGE_ESTIMATORS.register = register_advantage_estimator
POLICY_LOSSES.register = register_policy_loss
PREFERENCE_LOSSES.register = register_preference_loss
