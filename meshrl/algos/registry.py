"""Name → function registries for the two pluggable parts of a training step.

    @register_advantage_estimator("my_baseline", needs_values=False)
    def my_baseline(*, rewards, response_mask, group_ids, **_): ...

    @register_policy_loss("my_loss", default_agg="token-mean")
    def my_loss(*, logprobs, old_logprobs, advantages, response_mask, **_): ...

The config names a part (`algorithm.advantage_estimator`, `algorithm.policy_loss`); the
trainer looks it up here, so adding an algorithm never touches the loop. The decorators
attach the declared attributes (`needs_values`, `needs`, `default_agg`, `registered_name`) to the
function and wrap it with the shared input/output checks in `meshrl.algos.validate`.
A new name also goes into `meshrl/config/parts.py` (the torch-free list the config is
checked against at load time; `tests/unit/config/test_parts.py` fails until it is there).
"""
from __future__ import annotations

from typing import Callable

from meshrl.algos.validate import validated_estimator, validated_policy_loss


class UnknownNameError(KeyError):
    """A name that is not registered. The message lists the registered names."""

    def __str__(self) -> str:  # KeyError would repr() the message and show the quotes
        return str(self.args[0]) if self.args else ""


class Registry:
    """A named table of functions of one kind (e.g. "advantage estimator")."""

    def __init__(self, kind: str, decorator_name: str):
        self.kind, self.decorator_name = kind, decorator_name
        self._entries: dict[str, Callable] = {}

    def add(self, name: str, fn: Callable) -> Callable:
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} needs a non-empty string name, got {name!r}")
        if name in self._entries:
            other = self._entries[name]
            raise ValueError(f"{self.kind} {name!r} is already registered by "
                             f"{other.__module__}.{other.__qualname__}; pick another name")
        self._entries[name] = fn
        return fn

    def get(self, name: str) -> Callable:
        if name not in self._entries:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; registered: {', '.join(self.names())}. "
                f"Add one with @{self.decorator_name}({name!r}).")
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def remove(self, name: str) -> None:
        """Forget a name (for tests that register throw-away parts)."""
        self._entries.pop(name, None)

    def __contains__(self, name: str) -> bool:
        return name in self._entries


ADVANTAGE_ESTIMATORS = Registry("advantage estimator", "register_advantage_estimator")
# the extra inputs an estimator may declare (`needs=`), each delivered by the mesh on demand
ESTIMATOR_INPUTS = {
    "greedy_rewards": "the rollout decodes a greedy response per prompt, the reward scores it",
    "old_logprobs": "the learner runs its old-log-prob pass before the advantages",
    "sum_pi_squared": "that pass also computes Σ_v π(v)² per response token",
}
POLICY_LOSSES = Registry("policy loss", "register_policy_loss")
PREFERENCE_LOSSES = Registry("preference loss", "register_preference_loss")


def register_advantage_estimator(name: str, *, needs_values: bool = False, needs=(),
                                 paper: str = ""):
    """Decorator: register `fn` as advantage estimator `name`.

    `needs_values=True` marks estimators that need a critic's `values` [B, T] (GAE); the
    trainer reads `fn.needs_values` to decide whether to run the critic. `needs` names the
    extra inputs it reads (keys of `ESTIMATOR_INPUTS`); the feeder and the trainer read
    `fn.needs` to have them produced and passed. `paper` (title, authors, arXiv id) is
    shown by `meshrl algos`.
    """
    unknown = sorted(set(needs) - set(ESTIMATOR_INPUTS))
    if unknown:
        raise ValueError(f"advantage estimator {name!r} needs {unknown}, which the mesh does not "
                         f"deliver; known inputs: {', '.join(ESTIMATOR_INPUTS)}")

    def decorate(fn: Callable) -> Callable:
        wrapped = validated_estimator(fn, name=name, needs_values=needs_values)
        wrapped.registered_name, wrapped.needs_values, wrapped.paper = name, needs_values, paper
        wrapped.needs = frozenset(needs)
        return ADVANTAGE_ESTIMATORS.add(name, wrapped)
    return decorate


def get_advantage_estimator(name: str) -> Callable:
    """The estimator registered as `name`; `UnknownNameError` (a KeyError) lists the others."""
    return ADVANTAGE_ESTIMATORS.get(name)


def list_advantage_estimators() -> list[str]:
    return ADVANTAGE_ESTIMATORS.names()


def register_policy_loss(name: str, *, default_agg: str = "token-mean", paper: str = "",
                         level: str = "token"):
    """Decorator: register `fn` as policy loss `name`.

    `default_agg` is the loss aggregation the method's paper uses (see
    `meshrl.algos.aggregation`); the trainer's `loss_agg_mode` config wins over it. `paper`
    (title, authors, arXiv id) is shown by `meshrl algos`. `level` ("token" or "sequence") is
    where its importance ratio lives; another `importance_sampling_level` is refused.
    """
    if level not in ("token", "sequence"):
        raise ValueError(f"level={level!r} for policy loss {name!r}; expected token or sequence")
    from meshrl.algos.aggregation import AGG_MODES  # lazy: breaks the cycle with meshrl.algos.aggregation, which imports this module

    if default_agg not in AGG_MODES:
        raise ValueError(f"default_agg={default_agg!r} for policy loss {name!r} is not one of "
                         f"{', '.join(AGG_MODES)}")

    def decorate(fn: Callable) -> Callable:
        wrapped = validated_policy_loss(fn, name=name, level=level)
        wrapped.registered_name, wrapped.default_agg, wrapped.paper = name, default_agg, paper
        wrapped.level = level
        return POLICY_LOSSES.add(name, wrapped)
    return decorate


def get_policy_loss(name: str) -> Callable:
    """The policy loss registered as `name`; `UnknownNameError` (a KeyError) lists the others."""
    return POLICY_LOSSES.get(name)


def list_policy_losses() -> list[str]:
    return POLICY_LOSSES.names()


def register_preference_loss(name: str, *, paper: str = "", needs_lengths: bool = False):
    """Decorator: register `fn` as preference loss `name` (the offline DPO path).

    `fn(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected [B] summed log-probs,
    chosen_lengths, rejected_lengths [B] token counts or None, beta, state: dict, **options)`
    returns the per-pair loss [B]. `needs_lengths=True` marks losses on length-averaged
    log-probs (IPO, sigmoid_norm); `state` is a dict kept across steps (BCO's running mean).
    """
    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.paper, fn.needs_lengths = name, paper, needs_lengths
        return PREFERENCE_LOSSES.add(name, fn)
    return decorate


def get_preference_loss(name: str) -> Callable:
    """The preference loss registered as `name`; `UnknownNameError` lists the others."""
    return PREFERENCE_LOSSES.get(name)


def list_preference_losses() -> list[str]:
    return PREFERENCE_LOSSES.names()
