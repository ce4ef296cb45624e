"""precision: auto — the choice from CPU flags and probe figures, and the bf16 autocast path."""

import pytest
import torch

from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.inputs.models import precision
from meshrl.inputs.models.precision import choose, cpu_bf16_flags, resolve_model_dtype, resolve_precision
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch

CPUINFO_SPR = "flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
CPUINFO_EPYC = "flags\t\t: fpu sse2 avx2 fma\n"


def test_flags_from_cpuinfo_text():
    assert cpu_bf16_flags(CPUINFO_SPR) == ["avx512_bf16", "amx_bf16"]
    assert cpu_bf16_flags(CPUINFO_EPYC) == []


@pytest.mark.parametrize(
    "flags, fp32, bf16, expected",
    [
        (["avx512_bf16", "amx_bf16"], 146.0, 402.0, "bf16"),  # the fast host: 2.75x
        (["avx512_bf16"], 100.0, 120.0, "fp32"),  # flags but only 1.2x: not worth the precision
        ([], None, None, "fp32"),  # no flags: the probe is not even run
    ],
)
def test_choice_from_fake_probe_results(flags, fp32, bf16, expected):
    choice = choose(flags, fp32, bf16)
    assert choice.dtype == expected and choice.bf16 == (expected == "bf16")
    assert choice.torch_dtype == {"bf16": "bfloat16", "fp32": "float32"}[expected]


def test_auto_uses_the_probe_and_explicit_settings_do_not(monkeypatch):
    fake = choose(["amx_bf16"], 50.0, 200.0)  # a fake probe result, no timing involved
    monkeypatch.setattr(precision, "probe_host", lambda: fake)
    assert resolve_precision("auto") is fake
    assert resolve_precision("fp32").dtype == "fp32"
    assert resolve_precision("bf16").dtype == "bf16"
    assert resolve_precision("fp32", bf16=True).dtype == "bf16"  # legacy trainer.bf16=true
    with pytest.raises(ValueError, match="choose auto, fp32 or bf16"):
        resolve_precision("fp16")


@pytest.mark.parametrize("fp32, bf16, expected", [(50.0, 200.0, "bfloat16"), (50.0, 55.0, "float32")])
def test_model_dtype_auto_follows_the_probe_for_rollout_and_reference(monkeypatch, fp32, bf16, expected):
    monkeypatch.setattr(precision, "probe_host", lambda: choose(["avx512_bf16"], fp32, bf16))  # fake figures
    dtype, why = resolve_model_dtype("auto")
    assert dtype == expected and "model.dtype=auto" in why and "GFLOP/s" in why
    assert resolve_model_dtype("float32")[0] == "float32"  # an explicit setting never probes
    with pytest.raises(ValueError, match="choose auto, float32 or bfloat16"):
        resolve_model_dtype("fp16")


def test_bf16_autocast_step_keeps_fp32_master_weights_and_state():
    torch.set_num_threads(1)
    trainer = TrainerConfig(micro_batch_size=4, optim={"lr": 1e-3})
    policy = build_policy(build_tiny_llama(), trainer, total_steps=4, bf16=True)
    step = TrainStep(policy, AlgorithmConfig(advantage_estimator="grpo", kl_coef=0.0), trainer, max_staleness=0)
    metrics = step(random_batch(), 0)
    assert policy.bf16 and torch.isfinite(torch.tensor(metrics["loss"]))
    assert all(p.dtype == torch.float32 for p in policy.model.parameters())
    state = [v for s in policy.optimizer.state.values() for v in s.values() if v.dim() > 0]
    assert state and all(v.dtype == torch.float32 for v in state)
    with policy.autocast():  # the autocast path really computes in bf16
        assert policy.model.lm_head(torch.zeros(1, 32)).dtype == torch.bfloat16
