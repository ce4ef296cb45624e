"""A corpus of bad configs: each is refused at load time (before anything starts), and the
message names the key, the bad value and how to fix it."""

import pytest

from meshrl.config import ConfigError, load_config

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
EXTERNAL = "reward.components=[{name: judge, kind: external}]"

# (id, overrides, substrings the message must hold)
CASES = [
    # asynchrony the rollout cannot give: no room beyond the step being trained
    (
        "staleness-without-room",
        ["learner.max_staleness=1", "learner.prompts_per_step=4", "learner.max_groups_in_flight=4"],
        ["learner.max_staleness=1 asks the rollout to generate ahead", "max_groups_in_flight=4", "raise it to 8"],
    ),
    # names of registered parts: the valid ones listed, the closest suggested
    (
        "estimator-typo",
        ["algorithm.advantage_estimator=grpo2"],
        ["algorithm.advantage_estimator='grpo2'", "did you mean 'grpo'?", "Valid: dr_grpo, gae,"],
    ),
    (
        "estimator-unknown",
        ["algorithm.advantage_estimator=vtrace"],
        ["algorithm.advantage_estimator='vtrace' is not a known advantage estimator.", "rloo"],
    ),
    (
        "loss-typo",
        ["algorithm.policy_loss=gpso"],
        ["algorithm.policy_loss='gpso'", "did you mean 'gspo'?", "Valid: ", " ppo, "],
    ),
    ("loss-case", ["algorithm.policy_loss=PPO"], ["algorithm.policy_loss='PPO'", "Valid:"]),
    (
        "agg-typo",
        ["algorithm.loss_agg_mode=token_mean"],
        ["algorithm.loss_agg_mode='token_mean'", "did you mean 'token-mean'?"],
    ),
    ("agg-unknown", ["algorithm.loss_agg_mode=sum"], ["loss aggregation mode", "seq-mean-token-sum-norm"]),
    ("kl-typo", ["algorithm.kl_estimator=k33"], ["algorithm.kl_estimator='k33'", "did you mean 'k3'?"]),
    (
        "kl-unknown",
        ["algorithm.kl_estimator=kl"],
        ["not a known KL estimator", "Valid: abs, abs+, k1, k1+, k2, k3, k3+, mse"],
    ),
    (
        "dpo-type",
        ["algorithm.preset=dpo", "algorithm.dpo_loss_type=sigmoidd"],
        ["algorithm.dpo_loss_type='sigmoidd'", "did you mean 'sigmoid'?"],
    ),
    (
        "reward-kind-typo",
        ["reward.components=[{name: m, kind: math_verfy}]"],
        ["reward.components.0.kind", "'math_verfy'", "did you mean 'math_verify'?", "external"],
    ),
    (
        "reward-kind-unknown",
        ["reward.components=[{name: m, kind: bleu}]"],
        [
            "reward component kind",
            "Valid: environment, exact_match, external, length_penalty, math_verify, reasoning_gym, regex",
        ],
    ),
    (
        "alert-rule-typo",
        ["alerts.kl_hihg.max_kl=1"],
        ["alerts.kl_hihg: unknown key", "did you mean 'kl_high'?", "allowed here:"],
    ),
    ("section-key-typo", ["learner.stpes=3"], ["learner.stpes: unknown key", "did you mean 'steps'?"]),
    (
        "rollout-corr-mode",
        ["algorithm.rollout_correction.mode=tokens"],
        ["algorithm.rollout_correction.mode", "'tokens'", "'token'"],
    ),
    (
        "rollout-corr-criterion",
        ["algorithm.rollout_correction.reject={seq_mean_k4: 0.1}"],
        ["algorithm.rollout_correction.reject='seq_mean_k4'", "did you mean 'seq_mean_k3'?"],
    ),
    (
        "rollout-corr-pair-one-sided",
        ["algorithm.rollout_correction.reject={token_k3: [0.1, 0.2]}"],
        ["reject.token_k3=[0.1, 0.2]: token_k3 is bounded above only", "give one number"],
    ),
    (
        "rollout-corr-lower-unused",
        ["algorithm.rollout_correction.lower=0.5"],
        ["rollout_correction.lower=0.5 does nothing with mode 'token'", "(icepop, icepop_sequence)"],
    ),
    (
        "loss-mask-typo",
        ["algorithm.loss_masks={top_entropi: {quantile: 0.2}}"],
        ["algorithm.loss_masks='top_entropi' is not a known loss mask", "did you mean 'top_entropy'?"],
    ),
    (
        "loss-mask-option",
        ["algorithm.loss_masks={off_policy: {delta: 0.5}}"],
        ["loss_masks.off_policy has 'delta', which off_policy does not take; its options: threshold"],
    ),
    (
        "bias-kl-without-kl",
        ["algorithm.use_bias_correction_kl=true"],
        ["use_bias_correction_kl=true weights the KL term of the loss", "kl_coef=0.0", "remove the key"],
    ),
    (
        "adaptive-entropy-bounds",
        ["algorithm.adaptive_entropy={enabled: true, coef_min: 0.3, coef_max: 0.1}"],
        ["adaptive_entropy.coef_min=0.3 is above coef_max=0.1"],
    ),
    (
        "rollout-corr-lower-above-cap",
        ["algorithm.rollout_correction.mode=icepop", "algorithm.rollout_correction.lower=3"],
        ["rollout_correction.lower=3.0 must be below cap=2.0"],
    ),
    # non-finite floats, wherever a float is taken
    ("nan-lr", ["trainer.optim.lr=.nan"], ["trainer.optim.lr: must be a finite number", "NaN and ±inf"]),
    ("inf-kl-coef", ["algorithm.kl_coef=.inf"], ["algorithm.kl_coef: must be a finite number"]),
    ("nan-string-override", ["algorithm.entropy_coeff=nan"], ["algorithm.entropy_coeff: must be a finite"]),
    (
        "nan-reward-weight",
        ["reward.components=[{name: m, kind: math_verify, weight: .nan}]"],
        ["reward.components.0.weight: must be a finite number"],
    ),
    ("inf-timeout", ["reference.timeout_s=.inf"], ["reference.timeout_s: must be a finite number"]),
    ("nan-betas", ["trainer.optim.betas=[0.9, .nan]"], ["trainer.optim.betas.1: must be a finite"]),
    ("neg-inf-threshold", ["eval.correct_threshold=-.inf"], ["eval.correct_threshold: must be a finite"]),
    ("nan-alert", ["alerts.kl_high.max_kl=.nan"], ["alerts.kl_high.max_kl: must be a finite"]),
    ("inf-critic-lr", ["algorithm.critic.lr=.inf"], ["algorithm.critic.lr: must be a finite"]),
    # keys the chosen parts would ignore, or cannot run without
    (
        "sequence-level-with-ppo",
        ["algorithm.importance_sampling_level=sequence"],
        [
            "algorithm.importance_sampling_level='sequence' does nothing with policy_loss 'ppo'",
            "remove the key",
            "(gmpo, gspo, luspo, vespo)",
        ],
    ),
    (
        "token-level-with-gspo",
        ["algorithm.preset=gspo", "algorithm.importance_sampling_level=token"],
        [
            "'token' does nothing with policy_loss 'gspo'",
            "(cispo, clip_cov, dppo_kl, dppo_tv, dro, gpg, kl_cov, ppo, sapo)",
        ],
    ),
    (
        "gae-without-critic",
        ["algorithm.advantage_estimator=gae"],
        ["algorithm.advantage_estimator='gae' needs a critic", "algorithm.critic.enabled=true"],
    ),
    (
        "critic-unused",
        ["algorithm.critic.enabled=true"],
        ["algorithm.critic.enabled=true", "uses no values", "critic.enabled=false"],
    ),
    (
        "offline-with-ppo-loss",
        ["algorithm.offline=true"],
        [
            "algorithm.offline=true trains a preference loss",
            "policy_loss='ppo' would be ignored",
            "algorithm.policy_loss=dpo",
        ],
    ),
    ("dpo-loss-online", ["algorithm.policy_loss=dpo"], ["algorithm.policy_loss='dpo'", "algorithm.offline=true"]),
    ("external-without-address", [EXTERNAL], ["'judge' has kind 'external' but no address", "host:port"]),
    (
        "address-on-a-rule",
        ["reward.components=[{name: m, kind: regex, address: 'h:1'}]"],
        ["(kind 'regex') ignores address='h:1'", "kind: external"],
    ),
    (
        "duplicate-component",
        ["reward.components=[{name: m, kind: regex, params: {pattern: a}}, {name: m, kind: math_verify}]"],
        ["reward.components names must be unique", "['m']"],
    ),
    (
        "greedy-group",
        ["rollout.sampling.temperature=0"],
        ["rollout.sampling.temperature=0", "group_size=8", "set temperature > 0"],
    ),
    (
        "unknown-preset",
        ["algorithm.preset=grpoo"],
        ["algorithm.preset='grpoo' is not a known preset", "did you mean 'grpo'"],
    ),
]


@pytest.mark.parametrize("overrides, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_is_refused_naming_key_and_fix(overrides, expected):
    with pytest.raises(ConfigError) as err:
        load_config(base=BASE, overrides=overrides)
    message = str(err.value)
    for part in expected:
        assert part in message, f"{part!r} not in:\n{message}"


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["algorithm.preset=gspo"],  # its own sequence level
        ["algorithm.preset=gspo", "algorithm.importance_sampling_level=sequence"],
        ["algorithm.preset=ppo"],  # gae with its critic
        ["algorithm.preset=dpo"],
        ["rollout.sampling.temperature=0", "rollout.sampling.group_size=1"],
        ["reward.components=[{name: judge, kind: external, address: 'h:1'}]"],
        ["trainer.optim.lr=1e-300"],  # tiny but finite
        [
            "algorithm.rollout_correction={mode: icepop, lower: 0.5, batch_normalize: true, "
            "reject: {token_k1: [0.5, 1.5], seq_max_k3: 0.2}}"
        ],
        [
            "algorithm.policy_loss=vespo",
            "algorithm.loss_options={vespo_k_pos: 1.5}",
            "algorithm.loss_masks={top_entropy: {quantile: 0.2}, off_policy: {threshold: 0.5}}",
            "algorithm.adaptive_entropy={enabled: true, target: 0.3}",
            "algorithm.kl_coef=0.01",
            "algorithm.kl_estimator=abs+",
            "algorithm.use_bias_correction_kl=true",
        ],
    ],
    ids=[
        "defaults",
        "gspo",
        "gspo-explicit",
        "ppo",
        "dpo",
        "greedy-single",
        "external",
        "tiny-lr",
        "rollout-corr-full",
        "trl-terms",
    ],
)
def test_good_neighbours_of_the_bad_configs_load(overrides):
    load_config(base=BASE, overrides=overrides)


def test_a_kl_penalty_without_the_reference_is_refused_before_anything_starts():
    from meshrl.config import ConfigError, load_config

    base = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"preset": "grpo"}}
    with pytest.raises(
        ConfigError,
        match=r"reference.enabled=off, but algorithm.kl_coef=0.04 needs the "
        r"reference model's log-probs: set reference.enabled=auto, or algorithm.kl_coef=0",
    ):
        load_config(base=base, overrides=["reference.enabled=off"])
    assert load_config(base=base, overrides=["reference.enabled=off", "algorithm.kl_coef=0"]).reference_enabled is False
