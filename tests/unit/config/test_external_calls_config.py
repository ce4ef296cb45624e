"""Config of external reward calls (meshrl/config/external_calls.py): defaults, the example
mixing a reward model with a rule, and bad values refused with a message naming the fix."""

from pathlib import Path

import pytest

from meshrl.config import ConfigError
from meshrl.config.external_calls import FailureValue
from meshrl.config.load import load_config

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ppo_reward_model_smollm2.yaml"


def test_example_mixes_a_reward_model_with_a_rule():
    cfg = load_config(EXAMPLE)
    correct, rm = cfg.reward.components
    assert (correct.kind, rm.kind, rm.address, rm.weight) == ("math_verify", "reward_model", None, 0.5)
    assert (cfg.reward_model.normalize, cfg.reward_model.clip) == ("running", 5.0)
    assert rm.batch_size == 256 and rm.on_failure == FailureValue(value=0.0)
    assert (rm.max_concurrency, rm.retry.attempts, rm.breaker.failures, rm.breaker.cooldown_s) == (4, 3, 5, 1.0)
    assert correct.on_failure == "drop" and rm.tls is None and rm.cache_size == 0


@pytest.mark.parametrize(
    ("component", "message"),
    [
        ("{name: m, kind: math_verify, cache_size: 10}", "ignores ['cache_size']: they only apply to kind: external"),
        (
            "{name: j, kind: external, address: 'a:1', token_env: T, token_file: /t}",
            "set token_env or token_file, not both",
        ),
        (
            "{name: j, kind: external, address: 'a:1', retry: {initial_backoff_s: 3, max_backoff_s: 1}}",
            "retry.max_backoff_s=1.0 is below retry.initial_backoff_s=3.0",
        ),
        (
            "{name: j, kind: external, address: 'a:1', tls: {key_file: k.pem}}",
            "mutual TLS needs both cert_file and key_file",
        ),
        ("{name: j, kind: external, address: 'a:1', max_concurrency: 0}", "max_concurrency"),
    ],
)
def test_bad_external_settings_are_refused(tmp_path, component, message):
    path = tmp_path / "run.yaml"
    path.write_text(f"model: {{path: m}}\ndata: {{train: t.jsonl}}\nreward:\n  components:\n    - {component}\n")
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_config(path)
