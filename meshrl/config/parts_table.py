"""What every registered part declares, as the torch-free config sees it: parts_table.json.

The registries (meshrl/registry.py) live with their parts, above the config and beside torch
and the services; `scripts/gen_parts_table.py` writes each entry's name and declarations
(`Registry.add(name, obj, **declared)`) to parts_table.json, and the config reads that file
once, on first use. tests/unit/config/test_parts_table.py fails, naming the command, when the
file and the registries differ, so the file is never a second list kept by hand.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, fields
from importlib import resources

# inputs the loop fills in; a part's other keyword parameters with defaults are its options
INPUTS = frozenset(
    {
        "rewards",
        "response_mask",
        "group_ids",
        "values",
        "token_rewards",
        "step",
        "logprobs",
        "old_logprobs",
        "advantages",
        "policy_chosen",
        "policy_rejected",
        "ref_chosen",
        "ref_rejected",
        "chosen_lengths",
        "rejected_lengths",
        "beta",
        "state",
        "greedy_rewards",
        "importance_sampling_level",
        "reward_components",
        "reward_component_weights",
        "sum_pi_squared",
        "rollout_weights",
        "entropy",
        "behaviour_logprobs",
        "policy_chosen_full",
    }
)
# options with a config key of their own: algorithm.loss_options must not set them a second way
DEDICATED_OPTION_KEYS = {
    "epsilon": "algorithm.epsilon",
    "epsilon_high": "algorithm.epsilon_high",
    "dual_clip_c": "algorithm.dual_clip_c",
    "norm_by_std": "algorithm.norm_adv_by_std_in_grpo",
    "eps": "algorithm.adv_epsilon",
    "scale_rewards": "algorithm.scale_rewards",
    "normalize_advantages": "algorithm.normalize_advantages",
    "gamma": "algorithm.gamma",
    "lam": "algorithm.lam",
}


@dataclass(frozen=True)
class Declared:
    """One part as its decorator declares it (the decorator's defaults when it has none)."""

    family: str
    name: str
    options: tuple[str, ...] = ()  # keyword parameters with defaults, less inputs and dedicated keys
    needs_values: bool = False  # advantage estimators: needs a critic's values
    needs: tuple[str, ...] = ()  # advantage estimators: extra inputs the mesh delivers
    level: str = "token"  # policy losses: where the importance ratio lives
    two_sided: bool = False  # rejection criteria: bounded below and above (k1)
    uses_reference: bool = True  # preference losses: reads the reference log-probs (not sft)
    per_pair: bool = True  # preference losses: row i of the loss is pair i (not aot)


FIELDS = frozenset(f.name for f in fields(Declared)) - {"family", "name"}


@functools.cache
def kinds() -> dict[str, dict]:
    """kind → {"decorator": its decorator's name, "names": {name: what it declares}}."""
    text = resources.files("meshrl.config").joinpath("parts_table.json").read_text(encoding="utf-8")
    return json.loads(text)["kinds"]


def declared(kind: str, name: str, table: dict) -> Declared:
    """A part's declaration from its table entry (lists as tuples; keys the config needs only)."""
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in table.items() if k in FIELDS}
    return Declared(kind, name, **values)


@functools.cache
def registered(kind: str) -> dict[str, Declared]:
    """Name → declaration of every registered part of `kind`."""
    return {name: declared(kind, name, table) for name, table in kinds()[kind]["names"].items()}


def names(kind: str) -> tuple[str, ...]:
    return tuple(kinds()[kind]["names"])


def decorators() -> dict[str, str]:
    """kind → the name of the decorator that registers one (kinds without one left out)."""
    return {kind: family["decorator"] for kind, family in kinds().items() if family["decorator"]}
