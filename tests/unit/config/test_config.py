"""The run config: presets, YAML, overrides and the errors a user sees."""

import pytest
import yaml

from meshrl.config import ConfigError, load_config, parse_overrides
from meshrl.config.load import available_presets, dump_config

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def test_overrides_parse_yaml_values_into_nested_keys():
    assert parse_overrides(["a.b=1", "a.c=true", "d=[x, y]", "e=/p"]) == {
        "a": {"b": 1, "c": True},
        "d": ["x", "y"],
        "e": "/p",
    }


def test_override_without_equals_is_rejected():
    with pytest.raises(ConfigError, match="key.path=value"):
        parse_overrides(["trainer.bf16"])


@pytest.mark.parametrize(
    "preset", ["ppo", "grpo", "dapo", "gspo", "dpo", "rloo", "reinforce_plus_plus", "dr_grpo", "cispo", "remax"]
)
def test_every_preset_resolves(preset):
    cfg = load_config(base={**BASE, "algorithm": {"preset": preset}})
    assert cfg.algorithm.name == preset


def test_preset_picks_parts_and_user_keys_win():
    cfg = load_config(base={**BASE, "algorithm": {"preset": "dapo", "epsilon_high": 0.3}})
    assert (cfg.algorithm.advantage_estimator, cfg.algorithm.policy_loss) == ("grpo", "ppo")
    assert cfg.algorithm.epsilon_high == 0.3  # user beats preset (0.28)
    assert cfg.algorithm.dynamic_sampling and cfg.algorithm.kl_coef == 0.0
    assert not cfg.reference_enabled  # DAPO: no KL, no reference


def test_ppo_preset_enables_critic_and_reference():
    cfg = load_config(base={**BASE, "algorithm": {"preset": "ppo"}})
    assert cfg.algorithm.critic.enabled and cfg.reference_enabled
    assert cfg.algorithm.kl_in == "reward"


def test_unknown_preset_lists_known_ones():
    with pytest.raises(ConfigError, match="grpo") as err:
        load_config(base={**BASE, "algorithm": {"preset": "nope"}})
    assert "'nope'" in str(err.value)
    assert set(available_presets()) >= {"ppo", "grpo", "dapo", "gspo", "dpo"}


def test_unknown_key_names_key_and_allowed_keys():
    with pytest.raises(ConfigError) as err:
        load_config(base=BASE, overrides=["rollout.sampling.temprature=0.7"])
    msg = str(err.value)
    assert "rollout.sampling.temprature: unknown key" in msg and "temperature" in msg


def test_bad_value_names_key_and_value():
    with pytest.raises(ConfigError, match=r"learner.steps: .*greater than or equal to 1 \(got 0\)"):
        load_config(base=BASE, overrides=["learner.steps=0"])


def test_batch_arithmetic_disagreement_names_the_numbers():
    with pytest.raises(ConfigError, match="64 sequences .* trainer.mini_batches=3"):
        load_config(base=BASE, overrides=["learner.prompts_per_step=8", "trainer.mini_batches=3"])


def test_on_policy_requires_push_every_step():
    with pytest.raises(ConfigError, match="push_every=1"):
        load_config(base=BASE, overrides=["learner.push_every=2"])


def test_yaml_file_and_round_trip(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**BASE, "run": {"name": "r1"}, "algorithm": {"preset": "gspo"}}))
    cfg = load_config(path, ["trainer.bf16=true"])
    assert cfg.run.dir == "runs/r1" and cfg.trainer.bf16
    again = load_config(base=yaml.safe_load(dump_config(cfg)))
    assert again == cfg  # the saved config reproduces the run exactly


def test_missing_file_and_bad_yaml_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_home_is_expanded_in_model_path():
    cfg = load_config(base={**BASE, "model": {"path": "~/m"}})
    assert not cfg.model.path.startswith("~")


def test_overlong_buffer_must_fit_in_max_tokens():
    with pytest.raises(ConfigError, match="buffer_len=16 exceeds rollout.sampling.max_tokens=8"):
        load_config(base={**BASE, "algorithm": {"preset": "dapo"}}, overrides=["rollout.sampling.max_tokens=8"])
