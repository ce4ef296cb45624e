"""What every registered part declares, as the torch-free config sees it: parts_table.json.

The registries (meshrl/registry.py) live with their parts, above the config and beside torch
and the services; `scripts/gen_parts_table.py` writes each entry's name and declarations
(`Registry.add(name, obj, **declared)`) to parts_table.json, and the config reads that file
once, on first use. tests/unit/config/test_parts_table.py fails, naming the command, when the
file and the registries differ, so the file is never a second list kept by hand.

A part added since the file was written still works: a name the file lacks is looked up in
the live registries (`late_part`, which imports the parts, torch included) when a part's
source is newer than the file, with a warning naming the command that brings the file up
to date. So adding a part is its decorator; the common path stays torch-free.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

log = logging.getLogger("meshrl.config")
TABLE_FILE = Path(__file__).with_name("parts_table.json")
PART_TREES = ("meshrl", "services")  # where part files live, beside this package's parent
# a checkout or an install writes every file within moments of the table; an edit comes later
WRITTEN_TOGETHER_S = 60.0

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


def known(kind: str, name: str) -> bool:
    """Whether `name` is a registered part of `kind`: in the table, or added since it was written."""
    return name in kinds()[kind]["names"] or late_part(kind, name) is not None


@functools.cache
def table_may_be_stale() -> bool:
    """A source file under the parts' trees written well after parts_table.json (a part added or
    edited since scripts/gen_parts_table.py last ran); False for an install without the sources."""
    try:
        written = TABLE_FILE.stat().st_mtime + WRITTEN_TOGETHER_S
    except OSError:
        return False
    root = TABLE_FILE.parents[2]
    for tree in PART_TREES:
        for source in (root / tree).rglob("*.py"):
            if source.stat().st_mtime > written:
                return True
    return False


@functools.cache
def late_part(kind: str, name: str) -> Declared | None:
    """`name`'s declaration from the live registry when the table lacks it and may be stale
    (imports the registries: torch and the services); None when it is not registered there either."""
    if not table_may_be_stale():
        return None
    from meshrl.registry import all_registries  # lazy: imports every part file

    registry = all_registries().get(kind)
    if registry is None or name not in registry:
        return None
    log.warning(
        "%s %r is registered but not in %s yet: run .venv/bin/python scripts/gen_parts_table.py",
        kind,
        name,
        TABLE_FILE.name,
    )
    return declared(kind, name, dict(registry.entry(name).declared))


def decorators() -> dict[str, str]:
    """kind → the name of the decorator that registers one (kinds without one left out)."""
    return {kind: family["decorator"] for kind, family in kinds().items() if family["decorator"]}
