"""The parts a config may name, read from the declarations the registries are filled from.

A part is declared once, by its decorator: `@register_advantage_estimator("grpo")` in
meshrl/algos/advantages/, `@register_policy_loss("ppo", level="token")` in
meshrl/algos/losses/, `@register_preference_loss("sigmoid")` in meshrl/algos/preference/,
`@register_reward("regex", ...)` in services/reward/rules/; importing a folder runs them
and fills the registry (meshrl.algos.registry). The config must not import torch nor a
service, so it reads the same decorators from the same files as source (ast), once, on
first use: a new file in one of those folders is a new name here, with nothing else to edit.

A part can also be named by import path, `my_pkg.losses:my_loss` (torchtune's
`_component_`, prime-rl's import paths), to plug in a part from your own package:

    algorithm:
      advantage_estimator: my_pkg.parts:my_baseline
      policy_loss: my_pkg.parts:my_loss

At load the module is found without running it (importlib's find_spec imports only its
parent packages) and its source read the same way: a module that is not there, a function it does not define, or a function
registered as another kind of part is refused with the fix. The learner imports it
(meshrl.algos.registry). An undecorated function is taken as a part with the decorator's
defaults (no critic, token level, token-mean).
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CORE = Path(__file__).resolve().parents[1]  # the meshrl package's folder
# the decorator of each family, and the folder of the core package its built-ins live in
FAMILIES = {
    "advantage estimator": ("register_advantage_estimator", "algos/advantages"),
    "policy loss": ("register_policy_loss", "algos/losses"),
    "preference loss": ("register_preference_loss", "algos/preference"),
    "reward rule": ("register_reward", "services/reward/rules"),
    "rollout-correction mode": ("register_rollout_weights", "algos/correction"),
    "rejection criterion": ("register_rejection", "algos/correction"),
    "loss mask": ("register_loss_mask", "algos/loss_masks"),
    "PF-PPO reweighting": ("register_reweighting", "algos/resampling"),
}
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
# the offline preference loss (`algorithm.offline: true`, kind from `algorithm.dpo_loss_type`):
# not a registered policy loss, the offline learner computes it (`meshrl.algos.dpo`)
OFFLINE_POLICY_LOSS = "dpo"
EXTERNAL_REWARD_KIND = "external"  # a gRPC reward service
# the learned reward model (meshrl/config/reward_model.py): an external service that
# `meshrl train` starts itself from the run's `reward_model` section
REWARD_MODEL_KIND = "reward_model"
# `kind: environment`: the episode's environment reward; `params.credit` where the learner
# puts each turn's reward (services/reward/rules/environment.py, docs/trajectories.md)
ENVIRONMENT_REWARD_KIND = "environment"
ENVIRONMENT_CREDITS = ("turn", "episode")


def turn_credited_components(components) -> tuple[str, ...]:
    """Names of the `environment` components whose turn rewards the learner credits per turn
    (`params.credit: turn`, the default)."""
    return tuple(
        c.name for c in components if c.kind == ENVIRONMENT_REWARD_KIND and c.params.get("credit", "turn") == "turn"
    )


# tool-call formats of multi-turn rollouts (`@register_tool_parser` in services/rollout/agent/parsers)
TOOL_PARSERS = ("hermes",)


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


def options_of(fn: ast.FunctionDef) -> tuple[str, ...]:
    args = fn.args
    with_defaults = [a.arg for a in args.args[len(args.args) - len(args.defaults) :]]
    with_defaults += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return tuple(n for n in with_defaults if n not in INPUTS and n not in DEDICATED_OPTION_KEYS)


def decorator_call(fn: ast.FunctionDef, decorator: str) -> ast.Call | None:
    for node in fn.decorator_list:
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == decorator:
            return node
    return None


def literal(call: ast.Call, key: str, default):
    for kw in call.keywords:
        if kw.arg == key:
            return ast.literal_eval(kw.value)
    return default


def declared_in(call: ast.Call, family: str, name: str, fn: ast.FunctionDef) -> Declared:
    return Declared(
        family,
        name,
        options_of(fn),
        needs_values=bool(literal(call, "needs_values", False)),
        needs=tuple(literal(call, "needs", ())),
        level=literal(call, "level", "token"),
        two_sided=bool(literal(call, "two_sided", False)),
        uses_reference=bool(literal(call, "uses_reference", True)),
        per_pair=bool(literal(call, "per_pair", True)),
    )


def functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def folder_of(family: str) -> Path:
    relative = FAMILIES[family][1]
    if relative.startswith("services/"):  # installed as meshrl.services (package-dir): ask where
        services = importlib.util.find_spec("meshrl.services").submodule_search_locations[0]
        return Path(services) / relative.removeprefix("services/")
    return CORE / relative


@functools.cache
def registered(family: str) -> dict[str, Declared]:
    """Name → declaration of every built-in part of `family`, read from its folder's files."""
    decorator = FAMILIES[family][0]
    found = {}
    for path in sorted(folder_of(family).glob("*.py")):
        for fn in functions(path).values():
            call = decorator_call(fn, decorator)
            if call is not None:
                name = ast.literal_eval(call.args[0])
                found[name] = declared_in(call, family, name, fn)
    return dict(sorted(found.items()))


def module_literal(relative: str, variable: str):
    """The value of `variable = <literal>` (a dict's keys for a dict) in a core module's source."""
    tree = ast.parse((CORE / relative).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == variable for t in node.targets):
            if isinstance(node.value, ast.Dict):
                return tuple(ast.literal_eval(k) for k in node.value.keys)
            return tuple(ast.literal_eval(node.value))
    raise LookupError(f"{variable} is not assigned a literal in meshrl/{relative}")


@functools.cache
def kl_estimators() -> tuple[str, ...]:
    """The keys of KL_ESTIMATORS in meshrl/algos/kl.py."""
    return module_literal("algos/kl.py", "KL_ESTIMATORS")


@functools.cache
def loss_agg_modes() -> tuple[str, ...]:
    """AGG_MODES in meshrl/algos/aggregation.py."""
    return module_literal("algos/aggregation.py", "AGG_MODES")


def is_import_path(value: str) -> bool:
    return ":" in str(value)


def imported_part(key: str, value: str, family: str) -> Declared:
    """The declaration of `module:function`, read from the module's source without importing it."""
    module, _, attr = value.partition(":")
    where = f"{key}={value!r}"
    try:
        spec = importlib.util.find_spec(module) if module and attr else None
    except (ImportError, ValueError) as err:
        raise ValueError(
            f"{where}: cannot find module {module!r} ({err}); install the package or add its folder to PYTHONPATH"
        ) from None
    except Exception as err:  # its parent package's __init__ raised: named by type, not echoed
        raise ValueError(
            f"{where}: importing the packages above {module!r} raised {type(err).__name__}; fix that package"
        ) from None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ValueError(
            f"{where}: no Python module {module!r} here (expected `package.module:function`); "
            f"install the package or add its folder to PYTHONPATH"
        )
    defined = source_functions(where, Path(spec.origin))
    if attr not in defined:
        close = difflib.get_close_matches(attr, list(defined), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"{where}: {module} ({spec.origin}) defines no function {attr!r}{hint} "
            f"Functions there: {', '.join(sorted(defined)) or 'none'}"
        )
    return declared_for(where, family, value, defined[attr])


def source_functions(where: str, path: Path) -> dict[str, ast.FunctionDef]:
    """`functions(path)`, its failures as one line naming the file and line, never its text."""
    try:
        return functions(path)
    except SyntaxError as err:
        raise ValueError(f"{where}: {path} is not valid Python ({err.msg}, line {err.lineno}); fix the file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{where}: {path} cannot be read ({type(err).__name__}); fix the file") from None


def declared_for(where: str, family: str, name: str, fn: ast.FunctionDef) -> Declared:
    """A function named by import path: its own family's decorator, or none (the defaults)."""
    for other, (decorator, _) in FAMILIES.items():
        call = decorator_call(fn, decorator)
        if call is not None and other != family:
            raise ValueError(
                f"{where} is registered with @{decorator} ({other}), not as a {family}: name a {family} here"
            )
        if call is not None:
            return declared_in(call, family, name, fn)
    return Declared(family, name, options_of(fn))


def part(key: str, value: str, family: str, extra: Iterable[str] = ()) -> Declared | None:
    """`value`'s declaration (None for one of `extra`, names that are no registered part);
    ValueError naming the key, the value and the fix."""
    if is_import_path(value):
        return imported_part(key, value, family)
    names = registered(family)
    if value in names:
        return names[value]
    if value in extra:
        return None
    raise ValueError(
        unknown_name(key, value, [*names, *extra], family)
        + " (or a function of your own package: `package.module:function`)"
    )


def advantage_estimators() -> dict[str, Declared]:
    return registered("advantage estimator")


def policy_losses() -> dict[str, Declared]:
    return registered("policy loss")


def preference_losses() -> dict[str, Declared]:
    return registered("preference loss")


def rollout_correction_modes() -> dict[str, Declared]:
    return registered("rollout-correction mode")


def rejection_criteria() -> dict[str, Declared]:
    return registered("rejection criterion")


def loss_masks() -> dict[str, Declared]:
    return registered("loss mask")


def reweightings() -> dict[str, Declared]:
    return registered("PF-PPO reweighting")


def reward_rule_kinds() -> tuple[str, ...]:
    return tuple(registered("reward rule"))


def estimator_needs(name: str) -> tuple[str, ...]:
    """The extra inputs advantage estimator `name` (a registered name or an import path) declares."""
    return part("algorithm.advantage_estimator", name, "advantage estimator").needs


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


# The same declarations as plain tables, read on first access (PEP 562), for code that wants
# a name -> attribute mapping: nothing here is a second list.
TABLES = {
    "ADVANTAGE_ESTIMATORS": lambda: {n: d.needs_values for n, d in advantage_estimators().items()},
    "ESTIMATOR_NEEDS": lambda: {n: d.needs for n, d in advantage_estimators().items() if d.needs},
    "POLICY_LOSSES": lambda: {n: d.level for n, d in policy_losses().items()},
    "LOSS_OPTIONS": lambda: {
        n: d.options for family in (policy_losses, preference_losses) for n, d in family().items()
    },
    "DPO_LOSS_TYPES": lambda: tuple(preference_losses()),
    "KL_ESTIMATORS": kl_estimators,
    "LOSS_AGG_MODES": loss_agg_modes,
    "REWARD_RULE_KINDS": reward_rule_kinds,
}


def __getattr__(name: str):
    if name in TABLES:
        return TABLES[name]()
    raise AttributeError(f"module 'meshrl.config.parts' has no attribute {name!r}")
