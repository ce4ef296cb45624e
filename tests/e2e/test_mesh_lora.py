"""LoRA through the whole mesh: the learner trains PEFT adapters over the frozen tiny model,
takes the KL's reference log-probs from its own base with the adapter off (no reference
service runs), pushes only the adapter (model.lora.push: adapter, the default) that every
rollout replica serves with vLLM's LoRA support, and exports the merged model and the adapter."""

import math

import pytest
import torch
from safetensors.torch import load_file

pytestmark = pytest.mark.slow


def test_grpo_with_lora_trains_adapters_through_the_mesh(run_mesh, tiny_model_dir):
    result, metrics, ledger = run_mesh(
        "learner.steps=3",
        "model.lora.rank=8",
        "model.lora.alpha=16",
        "model.lora.target_modules=[q_proj,v_proj,o_proj]",
        "trainer.optim.lr=0.01",
    )
    run_dir = result.run_dir
    assert len(metrics) == 3 and all(math.isfinite(m["loss"]) for m in metrics)
    # GRPO's KL term ran against the base (adapter off): 0 at the first step, then positive
    assert metrics[0]["kl"] == pytest.approx(0.0, abs=1e-6) and metrics[-1]["kl"] > 0
    assert not (run_dir / "logs" / "reference-0.log").exists()  # no reference service, no second copy
    loaded = {e["version"] for e in ledger if e["event"] == "weights_loaded" and e["ok"]}
    assert {1, 2} <= loaded and all(e["policy_version"] == e["step"] for e in ledger if e["event"] == "trained")
    # each push carried the adapter alone: a fraction of the model's bytes
    pushed = [m["weights/bytes"] for m in metrics if "weights/bytes" in m]
    full = (tiny_model_dir / "model.safetensors").stat().st_size
    assert pushed and all(b < full / 5 for b in pushed), (pushed, full)
    rollout_log = (run_dir / "logs" / "rollout-0.log").read_text()
    assert "loaded adapter v1" in rollout_log and "loaded weights v1" not in rollout_log
    final = run_dir / "final"
    assert (final / "adapter" / "adapter_config.json").is_file()
    adapter = load_file(str(final / "adapter" / "adapter_model.safetensors"))
    assert adapter and all("lora_" in k for k in adapter)
    merged, base = load_file(str(final / "model.safetensors")), load_file(str(tiny_model_dir / "model.safetensors"))
    assert set(merged) >= set(base)
    changed = {k for k in base if not torch.equal(merged[k], base[k])}
    assert changed and all(k.endswith(("q_proj.weight", "v_proj.weight", "o_proj.weight")) for k in changed)
