"""Every registered algorithm part with its options and paper, as plain records.

`meshrl algos` prints this table. Options are read from each part's signature: its keyword
parameters with defaults, less the inputs the loop always passes (tensors and `step`), so
a new option shows up here as soon as it has a default. The paper is the `paper=` given at
registration (advantage estimators, policy losses, preference losses) or the part's
docstring (KL estimators); aggregation modes carry theirs in `AGG_MODE_NOTES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from meshrl.algos.aggregation import AGG_MODE_NOTES, AGG_MODES
from meshrl.algos.correction.registry import REJECTIONS, ROLLOUT_WEIGHTS
from meshrl.algos.kl import KL_ESTIMATORS
from meshrl.algos.loss_masks.registry import LOSS_MASKS
from meshrl.algos.options import part_options
from meshrl.algos.preference_weighting.registry import PREFERENCE_WEIGHTINGS
from meshrl.algos.registry import ADVANTAGE_ESTIMATORS, POLICY_LOSSES, PREFERENCE_LOSSES
from meshrl.algos.resampling.registry import REWEIGHTINGS


@dataclass(frozen=True)
class Part:
    family: str  # plural, as printed: "policy losses"
    name: str
    paper: str
    notes: str = ""  # a formula, "needs a critic's values", "default_agg=token-mean"
    options: dict[str, object] = field(default_factory=dict)


def split_doc(doc: str | None) -> tuple[str, str]:
    """A part docstring "formula; remarks (paper)." → ("formula; remarks", "paper")."""
    text = " ".join((doc or "").split()).rstrip(".")
    formula, _, paper = text.partition(" (")
    return formula, paper[:-1] if paper.endswith(")") else paper


def estimator_notes(fn) -> str:
    """What an estimator needs beyond rewards: a critic's values, its declared extra inputs."""
    notes = ["needs a critic's values"] if fn.needs_values else []
    if fn.needs:
        notes.append(f"needs {', '.join(sorted(fn.needs))}")
    return "; ".join(notes)


def registered_parts() -> list[Part]:
    """Estimators, policy losses, KL estimators, aggregation modes, DPO kinds and weightings,
    rollout correction's modes and rejection criteria, in that order."""
    parts = [
        Part("advantage estimators", n, fn.paper, estimator_notes(fn), part_options(fn))
        for n, fn in ADVANTAGE_ESTIMATORS.items()
    ]
    parts += [
        Part("policy losses", n, fn.paper, f"default_agg={fn.default_agg}", part_options(fn))
        for n, fn in POLICY_LOSSES.items()
    ]
    parts += [Part("KL estimators", n, *reversed(split_doc(KL_ESTIMATORS[n].__doc__))) for n in sorted(KL_ESTIMATORS)]
    parts += [Part("loss aggregation modes", n, AGG_MODE_NOTES[n][1], notes=AGG_MODE_NOTES[n][0]) for n in AGG_MODES]
    parts += [
        Part(
            "preference losses (offline: algorithm.policy_loss)",
            n,
            fn.paper,
            "needs response lengths" if fn.needs_lengths else "",
            part_options(fn),
        )
        for n, fn in PREFERENCE_LOSSES.items()
    ]
    parts += [
        Part(
            "DPO log-prob weightings (by their config key)", n, fn.paper, f"{fn.config_key}: {split_doc(fn.__doc__)[0]}"
        )
        for n, fn in PREFERENCE_WEIGHTINGS.items()
    ]
    return parts + correction_parts() + filter_parts()


def correction_parts() -> list[Part]:
    """Rollout correction's weights modes and rejection criteria (meshrl/algos/correction/)."""
    parts = [
        Part(
            "rollout-correction modes (algorithm.rollout_correction.mode)",
            n,
            fn.paper,
            f"{split_doc(fn.__doc__)[0]}; one weight per {fn.level}",
            part_options(fn),
        )
        for n, fn in ROLLOUT_WEIGHTS.items()
    ]
    return parts + [
        Part("rejection criteria (algorithm.rollout_correction.reject)", n, fn.paper, split_doc(fn.__doc__)[0])
        for n, fn in REJECTIONS.items()
    ]


def filter_parts() -> list[Part]:
    """The loss masks (meshrl/algos/loss_masks/) and PF-PPO's reweightings (meshrl/algos/resampling/)."""
    parts = [
        Part("loss masks (algorithm.loss_masks)", n, fn.paper, split_doc(fn.__doc__)[0], part_options(fn))
        for n, fn in LOSS_MASKS.items()
    ]
    parts += [
        Part(
            "PF-PPO reweightings (algorithm.pf_ppo.reweight_method)",
            n,
            fn.paper,
            split_doc(fn.__doc__)[0],
            part_options(fn),
        )
        for n, fn in REWEIGHTINGS.items()
    ]
    return parts
