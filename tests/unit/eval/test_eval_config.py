"""The `eval` config section: defaults, its checks against other sections, moved keys."""

import pytest

from meshrl.config import ConfigError, load_config
from meshrl.eval.plan import EvalPlan

BASE = ["model.path=m", "data.train=t.jsonl"]


def load(*overrides):
    return load_config(None, [*BASE, *overrides])


def test_defaults_are_off_and_greedy_only():
    cfg = load()
    assert (cfg.eval.every, cfg.eval.pass_k, cfg.eval.samples_per_prompt) == (0, 1, 0)


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["eval.every=5"], "eval.every=5 needs data.eval"),
        (["eval.at_start=true"], "eval.at_start=true needs data.eval"),
        (["data.eval=e.jsonl", "eval.correct_component=acc"], "eval.correct_component='acc' is not a reward component"),
        (["eval.pass_k=4", "eval.pass_n=2"], "eval.pass_n=2 is below eval.pass_k=4"),
        (["learner.eval_every=3"], "learner.eval_every=3 moved to eval.every"),
        (["eval.pass_k=0"], "eval.pass_k"),
        (["eval.evry=3"], "eval.evry: unknown key"),
        (["data.eval=e.jsonl", "eval.every=2", "algorithm.offline=true"], "offline"),
    ],
)
def test_errors_name_the_key(overrides, words):
    with pytest.raises(ConfigError, match=words):
        load(*overrides)


def test_plan_from_config():
    cfg = load(
        "data.eval=e.jsonl",
        "eval.every=2",
        "eval.pass_k=4",
        "eval.pass_n=8",
        "eval.k_temperature=0.7",
        "rollout.sampling.max_tokens=32",
        'rollout.sampling.stop=["\\n"]',
        "eval.correct_component=math",
        "run.seed=3",
    )
    plan = EvalPlan.from_run_config(cfg)
    assert (plan.pass_k, plan.pass_n, plan.max_tokens, plan.stop) == (4, 8, 32, ("\n",))
    greedy, sampled = plan.greedy_sampling(), plan.k_sampling(2)
    assert (greedy.n, greedy.temperature, greedy.max_tokens) == (1, 0.0, 32)
    assert (sampled.n, sampled.max_tokens, sampled.seed) == (8, 32, 3 * 1_000_003 + 3)
    assert sampled.temperature == pytest.approx(0.7)
    assert plan.component_names == ("math",) and plan.correct_component == "math"


def test_configs_saved_before_the_eval_section_still_load():
    assert load("learner.eval_every=0").eval.every == 0  # every old config.yaml holds this default
