"""`meshrl plan`: parameter counts equal the model's, the formulas on hand-computed numbers,
the learner's estimate against the peak a real training step takes on CPU, and the CLI's
fit check against a named device (a warning and exit 1 when a service does not fit)."""

import pytest
from transformers import LlamaConfig

from benchmarks.plan_memory import CASES, measure_case
from meshrl.cli.main import main
from meshrl.config import load_config
from meshrl.plan.memory import activation_bytes, kv_cache_needed, learner_memory
from meshrl.plan.shapes import hf_config, model_shape

LLAMA = dict(
    vocab_size=1000,
    hidden_size=64,
    intermediate_size=160,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    tie_word_embeddings=False,
)


@pytest.fixture
def model_dir(tmp_path):
    LlamaConfig(**LLAMA).save_pretrained(tmp_path / "m")
    return str(tmp_path / "m")


def run_config(model_dir, *overrides):
    return load_config(
        base={
            "model": {"path": model_dir},
            "data": {"train": "t.jsonl", "max_prompt_tokens": 24},
            "algorithm": {"preset": "grpo"},
            "rollout": {"sampling": {"group_size": 4, "max_tokens": 8}},
            "learner": {"prompts_per_step": 2},
            "trainer": {"micro_batch_size": 4},
        },
        overrides=list(overrides),
    )


def test_the_shape_counts_every_parameter(model_dir):
    shape = model_shape(hf_config(model_dir))
    # embed 1000×64, lm_head 64×1000, per layer: q 64×64, k/v 64×32 each, o 64×64, gate/up 64×160,
    # down 160×64, two norms of 64; the final norm 64
    per_layer = 64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 160 + 2 * 64
    assert shape.params == 2 * 1000 * 64 + 2 * per_layer + 64
    assert (shape.kv_dim, shape.mlp_width, shape.largest_layer_params) == (32, 160, per_layer)


def test_learner_items_by_hand(model_dir):
    cfg = run_config(model_dir)
    shape = model_shape(hf_config(model_dir))
    items = learner_memory(cfg, shape).items
    tokens = 4 * (24 + 8)
    assert items["weights (fp32)"] == items["gradients"] == 4 * shape.params
    assert items["optimizer (AdamW fp32)"] == 8 * shape.params
    assert items["activations"] == 2 * tokens * (11 * 64 + 3 * 32 + 4 * 160) * 4
    assert items["logits"] == 5 * tokens * 1000 * 4
    # checkpointing keeps each layer's input plus one layer recomputed
    assert activation_bytes(shape, tokens, 4, True) == 2 * tokens * 64 * 4 + tokens * (11 * 64 + 3 * 32 + 4 * 160) * 4
    # two FSDP ranks halve the sharded parts and gather a layer (+ the next one prefetched)
    two = learner_memory(run_config(model_dir, "learner.ranks=2"), shape).items
    assert (
        two["optimizer (AdamW fp32)"] == 4 * shape.params
        and two["FSDP gathered layers"] == 8 * shape.largest_layer_params
    )
    # one group's KV cache: 4 × 32 tokens × 2 (K and V) × 2 layers × 32 × 4 B
    assert kv_cache_needed(cfg, shape, 4) == 4 * 32 * 2 * 2 * 32 * 4


@pytest.mark.slow  # a fresh process per case (torch + transformers start-up)
@pytest.mark.parametrize("case", ["small", "small_ckpt"])
def test_the_estimate_is_near_the_measured_peak_of_a_real_step(case):
    """Steady (second-step) peaks measured here: small 329 MiB estimated vs 363 measured,
    checkpointed 263 vs 286; SmolLM2-135M shape (benchmarks/plan_memory.py) 3297 vs 3188."""
    result = measure_case(CASES[case])
    assert 0.75 < result["measured"] / result["estimate"] < 1.3, result


def test_plan_cli_prints_each_service_and_fits_a_big_device(model_dir, capsys):
    assert main(["plan", "/dev/null", f"model.path={model_dir}", "data.train=t.jsonl", "--device", "h100-80gb"]) == 0
    out = capsys.readouterr().out
    assert "memory plan" in out and "learner" in out and "rollout" in out and "WARNING" not in out


def test_plan_cli_warns_when_the_learner_does_not_fit(tmp_path, capsys):
    LlamaConfig(
        vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32
    ).save_pretrained(tmp_path / "7b")
    rc = main(["plan", "/dev/null", f"model.path={tmp_path / '7b'}", "data.train=t.jsonl", "--device", "l4"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "WARNING: learner needs" in out and "l4 has 24.00 GiB: it does not fit" in out
    assert "trainer.gradient_checkpointing=true" in out


def test_an_unknown_device_names_the_choices(model_dir, capsys):
    assert main(["plan", "/dev/null", f"model.path={model_dir}", "data.train=t.jsonl", "--device", "tpu9"]) == 2
    assert "--device 'tpu9' is unknown; choose one of: cpu, h200" in capsys.readouterr().err


def test_lora_trains_the_adapters_only_and_drops_the_reference_copy(model_dir):
    cfg = run_config(model_dir, "model.lora.rank=4", "model.lora.target_modules=[q_proj,v_proj]")
    shape = model_shape(hf_config(model_dir))
    items = learner_memory(cfg, shape).items
    adapters = 2 * (4 * (64 + 64) + 4 * (64 + 32))  # per layer: q 64→64, v 64→32; 2 layers
    assert items["LoRA adapters"] == items["gradients"] == 4 * adapters
    assert items["optimizer (AdamW fp32)"] == 8 * adapters and items["weights (fp32)"] == 4 * shape.params
    from meshrl.plan.report import memory_plan

    assert "reference" not in [s.service for s in memory_plan(cfg, shape=shape).services]


def test_the_push_copy_and_the_precision_the_learner_picks(model_dir):
    """The push copy in the engines' dtype (fp32 on CPU, bf16 on a GPU under model.dtype=auto;
    the adapter alone with LoRA's push: adapter); `trainer.precision: auto` means bf16
    activations on a GPU, fp32 on CPU."""
    shape = model_shape(hf_config(model_dir))
    tokens, per_token = 4 * (24 + 8), 2 * (11 * 64 + 3 * 32 + 4 * 160)
    cpu = learner_memory(run_config(model_dir, "model.dtype=auto"), shape).items
    gpu = learner_memory(run_config(model_dir, "model.dtype=auto"), shape, on_gpu=True).items
    assert (
        cpu["weights-push copy (32-bit)"] == 4 * shape.params and gpu["weights-push copy (16-bit)"] == 2 * shape.params
    )
    assert (cpu["activations"], gpu["activations"]) == (tokens * per_token * 4, tokens * per_token * 2)
    lora = learner_memory(run_config(model_dir, "model.lora.rank=4", "model.lora.target_modules=[q_proj]"), shape)
    adapter = 2 * 4 * (64 + 64)  # two layers' q_proj, rank × (in + out)
    assert lora.items["weights-push copy (32-bit)"] == 4 * adapter


def test_the_plan_warns_on_a_lora_target_that_matches_nothing(model_dir):
    from meshrl.plan.report import memory_plan

    plan = memory_plan(run_config(model_dir, "model.lora.target_modules=[q_proj,wqkv]"))
    assert any("entry 'wqkv' matches no linear layer" in w for w in plan.warnings)
    assert not memory_plan(run_config(model_dir, "model.lora.target_modules=[q_proj]")).warnings
