"""Algorithm and optimisation settings. An algorithm is a choice of registered parts.

Option names follow TRL and verl where those exist (`epsilon`, `epsilon_high`,
`loss_agg_mode`, `kl_coef`, `entropy_coeff`, `importance_sampling_level`, ...), so people
who run those can read a meshrl config at a glance. `name` is a label for humans and
metrics; the training loop never branches on it.
"""

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from meshrl.config.loss_terms import AdaptiveEntropyConfig, PfPpoConfig, check_loss_masks
from meshrl.config.parts import (
    DEDICATED_OPTION_KEYS,
    OFFLINE_POLICY_LOSS,
    check_name,
    kl_estimators,
    loss_agg_modes,
    part,
    policy_losses,
    preference_losses,
)
from meshrl.config.rollout_correction import RolloutCorrectionConfig
from meshrl.config.values import Strict


class CriticConfig(Strict):
    """A value head on the policy's architecture (PPO). Disabled when `enabled` is false."""

    enabled: bool = False
    lr: float = 1e-5
    vf_coef: float = 0.5
    cliprange_value: float | None = 0.2  # None = unclipped value loss


class OverlongConfig(Strict):
    """DAPO's soft overlong punishment: a linear penalty over the last `buffer_len` tokens."""

    enabled: bool = False
    buffer_len: int = Field(16, ge=1)
    penalty_factor: float = Field(1.0, ge=0.0)


class AlgorithmConfig(Strict):
    """Which parts make the algorithm, and their knobs."""

    name: str = "grpo"
    advantage_estimator: str = "grpo"
    policy_loss: str = "ppo"
    # advantage estimation
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    lam: float = Field(1.0, ge=0.0, le=1.0)
    norm_adv_by_std_in_grpo: bool = True
    scale_rewards: Literal["group", "batch", "none"] = "group"  # grpo's σ (TRL's option)
    normalize_advantages: bool = False  # rloo: whiten A over the batch (TRL's RLOO option)
    # each sample's reward clamped into [low, high] before the estimator (TRL's RLOO option)
    reward_clip_range: tuple[float, float] | None = None
    adv_epsilon: float = Field(1e-6, gt=0.0)  # the estimators' eps in A / (σ + eps)
    # policy loss
    epsilon: float = Field(0.2, gt=0.0)
    epsilon_high: float | None = Field(None, gt=0.0)  # None = symmetric clip (epsilon)
    dual_clip_c: float | None = Field(None, gt=1.0)  # e.g. 3.0; applies only where A < 0
    # None = the policy loss's own level (ppo/cispo token, gspo sequence); a level the loss
    # does not compute is refused rather than silently ignored
    importance_sampling_level: Literal["token", "sequence"] | None = None
    loss_agg_mode: str = "token-mean"
    # KL to the reference model
    kl_coef: float = Field(0.0, ge=0.0)
    kl_estimator: str = "k3"
    kl_in: Literal["loss", "reward"] = "loss"
    # KL-in-reward coefficient: fixed kl_coef, or adaptive from kl_coef towards kl_target over
    # kl_horizon sequences (Ziegler et al. 2019; meshrl.algos.kl_control)
    kl_ctrl: Literal["fixed", "adaptive"] = "fixed"
    kl_target: float = Field(0.1, gt=0.0)
    kl_horizon: int = Field(10000, ge=1)
    # TRL's use_bias_correction_kl: the KL-in-loss term times the importance ratio
    # (meshrl/algos/kl_weighting.py); TRL's default is true, verl has none
    use_bias_correction_kl: bool = False
    entropy_coeff: float = 0.0
    # adapt entropy_coeff towards a target entropy (Skywork-OR1; meshrl/config/loss_terms.py)
    adaptive_entropy: AdaptiveEntropyConfig = AdaptiveEntropyConfig()
    # token filters on the policy-gradient term by name, with their options
    # (meshrl/algos/loss_masks/: top_entropy, off_policy)
    loss_masks: dict[str, dict[str, float]] = {}
    # DAPO
    dynamic_sampling: bool = False
    max_sampling_rounds: int = Field(4, ge=1)
    overlong: OverlongConfig = OverlongConfig()
    # PPO
    critic: CriticConfig = CriticConfig()
    # verl's PF-PPO: redraw the batch's rows by reward after the advantages (meshrl/algos/resampling/)
    pf_ppo: PfPpoConfig = PfPpoConfig()
    # per-part options by name (e.g. sapo's tau_pos, discopop_tau, label_smoothing); each must be
    # an option of the chosen policy loss / preference losses (`meshrl algos` lists them)
    loss_options: dict[str, float | int | bool | str] = {}
    # DPO (offline preference pairs). policy_loss names the preference loss (TRL's loss_type),
    # or is `dpo`, which takes it from dpo_loss_type: one name or a list summed with weights
    beta: float = Field(0.1, gt=0.0)
    dpo_loss_type: str | list[str] = "sigmoid"
    dpo_loss_weights: list[float] | None = None  # one per dpo_loss_type entry; None = 1 each
    # TRL's ld_alpha (LD-DPO): the longer response's tail beyond the shorter one's length counts
    # this much in its summed log-prob (meshrl/algos/preference_weighting/ld.py); None = 1
    dpo_ld_alpha: float | None = Field(None, ge=0.0, le=1.0)
    # TRL's use_weighting (WPO): each pair's loss times the policy's aligned probability of
    # its two responses (meshrl/algos/preference_weighting/wpo.py)
    dpo_use_weighting: bool = False
    offline: bool = False
    rollout_correction: RolloutCorrectionConfig = RolloutCorrectionConfig()

    @field_validator("advantage_estimator")
    @classmethod
    def _known_estimator(cls, name: str) -> str:
        part("algorithm.advantage_estimator", name, "advantage estimator")
        return name

    @field_validator("policy_loss")
    @classmethod
    def _known_loss(cls, name: str) -> str:
        part("algorithm.policy_loss", name, "policy loss", extra=(OFFLINE_POLICY_LOSS, *preference_losses()))
        return name

    @field_validator("loss_agg_mode")
    @classmethod
    def _known_agg(cls, name: str) -> str:
        return check_name("algorithm.loss_agg_mode", name, loss_agg_modes(), "loss aggregation mode")

    @field_validator("kl_estimator")
    @classmethod
    def _known_kl(cls, name: str) -> str:
        return check_name("algorithm.kl_estimator", name, kl_estimators(), "KL estimator")

    @field_validator("loss_masks")
    @classmethod
    def _known_masks(cls, configured: dict) -> dict:
        return check_loss_masks(configured)

    @field_validator("dpo_loss_type")
    @classmethod
    def _known_dpo(cls, name: str | list[str]) -> str | list[str]:
        for one in [name] if isinstance(name, str) else name:
            check_name("algorithm.dpo_loss_type", one, preference_losses(), "DPO loss type")
        return name

    @field_validator("reward_clip_range")
    @classmethod
    def _ordered_clip(cls, bounds: tuple[float, float] | None) -> tuple[float, float] | None:
        if bounds is not None and not (math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and bounds[0] < bounds[1]):
            raise ValueError(
                f"algorithm.reward_clip_range={list(bounds)}: need two finite numbers [low, high] with low < high"
            )
        return bounds

    @model_validator(mode="after")
    def _parts_agree(self) -> "AlgorithmConfig":
        for problem in part_problems(self):
            raise ValueError(problem)
        return self

    @property
    def needs_reference(self) -> bool:
        return self.kl_coef > 0.0 or self.offline

    @property
    def preference_losses(self) -> list[str]:
        """The offline path's preference loss names: policy_loss, or dpo_loss_type under `dpo`."""
        if self.policy_loss != OFFLINE_POLICY_LOSS:
            return [self.policy_loss]
        return [self.dpo_loss_type] if isinstance(self.dpo_loss_type, str) else list(self.dpo_loss_type)


class OptimConfig(Strict):
    """AdamW with linear warmup then cosine decay to `min_lr_ratio` of the peak."""

    lr: float = Field(1e-6, gt=0.0)
    weight_decay: float = Field(0.0, ge=0.0)
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = Field(0, ge=0)
    min_lr_ratio: float = Field(0.1, ge=0.0, le=1.0)
    max_grad_norm: float = Field(1.0, gt=0.0)
    # AdamW's implementation: fused = one kernel over all parameters; auto = fused on CUDA,
    # torch's default (foreach) elsewhere
    fused: Literal["auto", "on", "off"] = "auto"


class TrainerConfig(Strict):
    """How one step is computed: epochs, mini-batches, micro-batches, precision."""

    ppo_epochs: int = Field(1, ge=1)
    mini_batches: int = Field(1, ge=1)  # optimizer steps per epoch
    micro_batch_size: int = Field(4, ge=1)  # sequences per forward/backward
    bf16: bool = False  # bf16 autocast (forces precision=bf16)
    # auto: bf16 autocast where this CPU runs bf16 matmuls faster (flags + probe), else fp32
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    # auto: skip the old-log-prob pass when strictly on-policy with one optimizer step
    # (old = current, detached), else recompute; rollout: the engine's log-probs as π_old
    old_logprobs: Literal["auto", "recompute", "rollout"] = "auto"
    # how the model runs on a micro-batch (meshrl.algos.forward); auto = padded, the cheapest
    # in CPU-seconds (docs/benchmarks.md, "Training step"); the other two are opt-in
    forward: Literal["auto", "padded", "shared_prefix", "packed"] = "auto"
    # attention kernel of a transformers model; auto = varlen with forward=packed (each packed
    # sequence attends to itself, no N x N mask: meshrl/algos/varlen_attention.py), else eager
    # on CPU (its backward is faster than SDPA's there: docs/benchmarks.md, "meshrl side by
    # side with TRL"), the model's own on CUDA
    attention: Literal["auto", "eager", "sdpa", "varlen"] = "auto"
    gradient_checkpointing: bool = False
    # torch.compile each decoder layer (dynamic shapes: response lengths vary); the first
    # step pays the compilation (minutes on a small CPU: docs/benchmarks.md, "Training step")
    compile: bool = False
    # the LM head + log-softmax (meshrl/algos/head_plan.py): chunked = ours, liger =
    # Liger-Kernel's fused linear cross-entropy (CUDA, liger-kernel>=0.8.2, no entropy bonus);
    # auto = chunked until benchmarks/gpu_train_step.py shows liger faster (a lever is
    # switched on by a measurement, not presumed)
    lm_head: Literal["auto", "chunked", "liger"] = "auto"
    # logits (rows x vocab) per head chunk; auto = 4M on CPU, on CUDA lm_head_memory x the
    # free device memory at start / 20 bytes per logit
    lm_head_chunk: int | Literal["auto"] = "auto"
    lm_head_memory: float = Field(0.1, gt=0.0, le=0.5)
    # a failed step leaves the weights as they were (services/learner/train/transaction.py):
    # auto = nothing fallible after a single update's optimizer step, and with several updates
    # per batch a snapshot beside the weights (device memory: weights + optimizer state);
    # host = that snapshot in host memory; off = none (a failed multi-update step resumes
    # from the last checkpoint)
    rollback: Literal["auto", "device", "host", "off"] = "auto"
    seed: int = 0
    optim: OptimConfig = OptimConfig()


def part_problems(algo: AlgorithmConfig) -> list[str]:
    """Keys the chosen parts would ignore or cannot run with, each naming the fix."""
    return (
        offline_problems(algo)
        + level_problems(algo)
        + loss_option_problems(algo)
        + dpo_weighting_problems(algo)
        + kl_problems(algo)
        + critic_problems(algo)
    )


def level_problems(algo: AlgorithmConfig) -> list[str]:
    """An importance_sampling_level the chosen policy loss does not compute."""
    loss = online_loss(algo)
    level = loss.level if loss else None  # None: a preference loss has no importance ratio
    wanted = algo.importance_sampling_level
    if wanted in (None, level):
        return []
    losses = ", ".join(n for n, d in policy_losses().items() if d.level == wanted)
    return [
        f"algorithm.importance_sampling_level={wanted!r} does nothing with policy_loss "
        f"{algo.policy_loss!r} (its ratio is {level or 'absent'}); remove the key, or choose "
        f"a {wanted}-level policy_loss ({losses})"
    ]


def kl_problems(algo: AlgorithmConfig) -> list[str]:
    """KL switches that act on a KL term the config does not have (in the loss, or the reward)."""
    problems = []
    if algo.use_bias_correction_kl and (algo.kl_in != "loss" or algo.kl_coef == 0):
        problems.append(
            f"algorithm.use_bias_correction_kl=true weights the KL term of the loss, but "
            f"kl_in={algo.kl_in!r}, kl_coef={algo.kl_coef}: set kl_in=loss and kl_coef > 0, "
            f"or remove the key"
        )
    if algo.kl_ctrl == "adaptive" and (algo.kl_in != "reward" or algo.kl_coef == 0):
        problems.append(
            f"algorithm.kl_ctrl='adaptive' adapts the KL-in-reward coefficient, but "
            f"kl_in={algo.kl_in!r}, kl_coef={algo.kl_coef}: set kl_in=reward and an "
            f"initial kl_coef > 0, or kl_ctrl=fixed"
        )
    return problems


def critic_problems(algo: AlgorithmConfig) -> list[str]:
    """A critic the estimator needs but is off, or one that is on for an estimator without values."""
    needs_values = part("algorithm.advantage_estimator", algo.advantage_estimator, "advantage estimator").needs_values
    if needs_values and not algo.critic.enabled and not algo.offline:
        return [
            f"algorithm.advantage_estimator={algo.advantage_estimator!r} needs a "
            f"critic's values: set algorithm.critic.enabled=true (or algorithm.preset=ppo)"
        ]
    if algo.critic.enabled and not needs_values:
        return [
            f"algorithm.critic.enabled=true, but advantage_estimator "
            f"{algo.advantage_estimator!r} uses no values, so the critic would train "
            f"for nothing; set algorithm.critic.enabled=false or advantage_estimator=gae"
        ]
    return []


def online_loss(algo: AlgorithmConfig):
    """The declaration of the policy loss, or None when it is a preference loss (or dpo)."""
    return part(
        "algorithm.policy_loss", algo.policy_loss, "policy loss", extra=(OFFLINE_POLICY_LOSS, *preference_losses())
    )


def loss_options(algo: AlgorithmConfig, name: str) -> tuple[str, ...]:
    declared = online_loss(algo) if name == algo.policy_loss and not algo.offline else preference_losses().get(name)
    return declared.options if declared else ()


def loss_option_problems(algo: AlgorithmConfig) -> list[str]:
    """`loss_options` keys the chosen loss(es) do not take, or that have a key of their own."""
    chosen = algo.preference_losses if algo.offline else [algo.policy_loss]
    known = sorted({o for name in chosen for o in loss_options(algo, name)})
    problems = []
    for key in algo.loss_options:
        if key in DEDICATED_OPTION_KEYS:
            problems.append(
                f"algorithm.loss_options sets {key!r}, which has its own key: set {DEDICATED_OPTION_KEYS[key]}"
            )
        elif key not in known:
            problems.append(
                f"algorithm.loss_options has {key!r}, which {', '.join(chosen)} does "
                f"not take; its options: {', '.join(known) or 'none'} (`meshrl algos` "
                f"lists every part's options)"
            )
    return problems


def dpo_weighting_problems(algo: AlgorithmConfig) -> list[str]:
    """LD-DPO / WPO / an f-divergence on the online path, or with losses that cannot take them."""
    turned_on = [k for k in ("dpo_ld_alpha", "dpo_use_weighting") if getattr(algo, k) not in (None, False)]
    if turned_on and not algo.offline:
        return [
            f"algorithm.{turned_on[0]} weights the offline DPO path's log-probs; set "
            f"algorithm.offline=true (or algorithm.preset=dpo), or remove it"
        ]
    if not algo.offline:
        return []
    declared = preference_losses()
    problems = []
    sorted_pairs = [n for n in algo.preference_losses if n in declared and not declared[n].per_pair]
    if algo.dpo_use_weighting and sorted_pairs:
        problems.append(
            f"algorithm.dpo_use_weighting weights each pair's loss, but {sorted_pairs[0]} "
            f"pairs sorted log-ratios, not the input pairs (TRL refuses it too); remove one"
        )
    return problems + f_divergence_problems(algo)


def f_divergence_problems(algo: AlgorithmConfig) -> list[str]:
    """An f-divergence other than reverse KL with a preference loss that has no form for it."""
    declared = preference_losses()
    f_divergence = algo.loss_options.get("f_divergence", "reverse_kl")
    ignoring = [
        n
        for n in algo.preference_losses
        if n in declared and declared[n].uses_reference and "f_divergence" not in declared[n].options
    ]
    if f_divergence == "reverse_kl" or not ignoring:
        return []
    return [
        f"algorithm.loss_options f_divergence={f_divergence!r}: {', '.join(ignoring)} has "
        f"no f-divergence form and would ignore it; use reverse_kl with it, or losses "
        f"that take it ({', '.join(n for n, d in declared.items() if 'f_divergence' in d.options)})"
    ]


def offline_problems(algo: AlgorithmConfig) -> list[str]:
    """The offline (DPO) path trains only preference losses; anything else would be ignored."""
    preference = algo.policy_loss == OFFLINE_POLICY_LOSS or algo.policy_loss in preference_losses()
    if algo.offline and not preference:
        return [
            f"algorithm.offline=true trains a preference loss, so policy_loss={algo.policy_loss!r} "
            f"would be ignored; set algorithm.policy_loss to a preference loss "
            f"({', '.join(preference_losses())}), or algorithm.policy_loss=dpo with dpo_loss_type "
            f"(or algorithm.preset=dpo)"
        ]
    if preference and not algo.offline:
        return [
            f"algorithm.policy_loss={algo.policy_loss!r} trains on offline preference pairs: set "
            "algorithm.offline=true (or algorithm.preset=dpo), or pick an online loss "
            f"({', '.join(policy_losses())})"
        ]
    return dpo_loss_problems(algo)


def dpo_loss_problems(algo: AlgorithmConfig) -> list[str]:
    """dpo_loss_type set beside a preference policy_loss, or a weight list of the wrong length."""
    problems = []
    if (
        algo.offline
        and algo.policy_loss != OFFLINE_POLICY_LOSS
        and algo.dpo_loss_type not in ("sigmoid", algo.policy_loss)
    ):  # sigmoid: the default
        problems.append(
            f"algorithm.policy_loss={algo.policy_loss!r} is the preference loss, so "
            f"dpo_loss_type={algo.dpo_loss_type!r} would be ignored; remove one (use "
            f"policy_loss=dpo with dpo_loss_type for a weighted list)"
        )
    weights, names = algo.dpo_loss_weights, algo.preference_losses
    if weights is not None and len(weights) != len(names):
        problems.append(
            f"algorithm.dpo_loss_weights has {len(weights)} weights for {len(names)} "
            f"preference losses ({', '.join(names)}); give one weight per loss"
        )
    return problems
