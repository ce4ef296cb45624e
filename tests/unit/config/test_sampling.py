"""One source of sampling parameters: generation settings and the log-prob temperature."""

import pytest

from meshrl.config import ConfigError, load_config
from meshrl.config.sampling import greedy_sampling, logprob_temperature, rollout_sampling
from meshrl.eval.plan import EvalPlan

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def cfg_with(**sampling):
    return load_config(base={**BASE, "rollout": {"sampling": sampling}})


def test_rollout_sampling_carries_the_config_and_the_same_temperature_for_logprobs():
    cfg = cfg_with(group_size=4, temperature=0.7, top_p=0.9, max_tokens=32, stop=["\n"])
    s = rollout_sampling(cfg)
    assert (s.n, s.temperature, s.top_p, s.max_tokens, s.stop) == (4, 0.7, 0.9, 32, ("\n",))
    assert not s.greedy and s.logprob_temperature == 0.7 and logprob_temperature(cfg) == 0.7


def test_greedy_generation_takes_logprobs_at_temperature_one_and_drops_top_p():
    cfg = cfg_with(group_size=1, temperature=0.0, top_p=0.5)
    s = rollout_sampling(cfg)
    assert s.greedy and s.top_p == 1.0  # argmax ignores the nucleus; the engine is told so
    assert s.logprob_temperature == 1.0 and logprob_temperature(cfg) == 1.0


def test_offline_runs_take_logprobs_at_temperature_one_whatever_the_sampling_section_says():
    cfg = load_config(base={**BASE, "algorithm": {"preset": "dpo"}, "rollout": {"sampling": {"temperature": 0.5}}})
    assert logprob_temperature(cfg) == 1.0


def test_to_proto_keeps_every_field_and_the_seed():
    proto = rollout_sampling(cfg_with(group_size=2, temperature=0.8, max_tokens=9)).to_proto(seed=5)
    assert (proto.n, proto.max_tokens, proto.seed) == (2, 9, 5)
    assert proto.temperature == pytest.approx(0.8) and proto.top_p == 1.0


def test_eval_greedy_and_pass_k_sampling_follow_the_same_rule():
    cfg = load_config(
        base={
            **BASE,
            "eval": {"pass_k": 4, "k_temperature": 0.6, "k_top_p": 0.95},
            "rollout": {"sampling": {"max_tokens": 12, "stop": ["."]}},
        }
    )
    plan = EvalPlan.from_run_config(cfg)
    assert plan.greedy_sampling() == greedy_sampling(12, (".",)).to_proto()
    k = plan.k_sampling(prompt_index=2)
    assert (k.n, k.max_tokens, list(k.stop), k.seed) == (4, 12, ["."], 3)
    assert k.temperature == pytest.approx(0.6) and k.top_p == pytest.approx(0.95)


def test_greedy_groups_are_refused_naming_the_keys_and_the_fix():
    with pytest.raises(ConfigError) as err:
        cfg_with(temperature=0.0, group_size=8)
    message = str(err.value)
    assert "rollout.sampling.temperature=0" in message and "group_size=8" in message
    assert "set temperature > 0" in message
