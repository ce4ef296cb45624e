"""A checkpoint exported as a HF dir loads in transformers, generates, and gives the same logits."""

import json

import pytest
import torch

from meshrl.inputs.checkpoint import CheckpointError, export_hf, save_checkpoint
from tests.unit.inputs.checkpoint.helpers import tiny_model, train_step, trainer


@pytest.fixture
def trained(tmp_path):
    """(run dir, the model at its saved step in eval mode)."""
    torch.manual_seed(0)
    model = tiny_model()
    optimizer, scheduler = trainer(model)
    for _ in range(2):
        train_step(model, optimizer, scheduler)
    save_checkpoint(
        tmp_path / "run",
        2,
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        config_hash="h",
        config={"model": {"path": str(tmp_path / "absent")}},
    )
    return tmp_path / "run", model.eval()


def test_export_round_trip(trained, tokenizer_dir, tmp_path):
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run, model = trained
    out = export_hf(run, tmp_path / "export", tokenizer_dir=tokenizer_dir)
    names = {p.name for p in out.iterdir()}
    assert {
        "model.safetensors",
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "meshrl_export.json",
    } <= names
    with safe_open(out / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    assert "model.embed_tokens.weight" in keys and "lm_head.weight" not in keys  # tied: once
    assert json.loads((out / "meshrl_export.json").read_text())["step"] == 2

    loaded = AutoModelForCausalLM.from_pretrained(out, attn_implementation="eager").eval()
    assert loaded.lm_head.weight.data_ptr() == loaded.model.embed_tokens.weight.data_ptr()
    ids = torch.randint(3, 64, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, model(ids).logits)
    tokenizer = AutoTokenizer.from_pretrained(out)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "1+1=?"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt == "<|im_start|>user\n1+1=?<|im_end|>\n<|im_start|>assistant\n"
    enc = tokenizer(prompt, return_tensors="pt")
    kwargs = dict(max_new_tokens=5, min_new_tokens=5, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    generated = loaded.generate(**enc, **kwargs)
    assert generated.shape == (1, enc["input_ids"].shape[1] + 5)
    assert torch.equal(generated, model.generate(**enc, **kwargs))


def test_export_bf16_and_factory(trained, tokenizer_dir, tmp_path):
    from safetensors.torch import load_file

    run, model = trained
    out = export_hf(
        run / "checkpoints/step_2",
        tmp_path / "bf16",
        tokenizer_dir=tokenizer_dir,
        model_factory=lambda: tiny_model(seed=3),
        dtype="bfloat16",
    )
    weights = load_file(out / "model.safetensors")
    assert weights["model.norm.weight"].dtype == torch.bfloat16
    assert torch.equal(weights["model.norm.weight"], model.model.norm.weight.to(torch.bfloat16))


def test_export_errors(trained, tokenizer_dir, tiny_model_dir, tmp_path):
    run, _ = trained
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(CheckpointError, match="already exists and is not empty"):
        export_hf(run, tmp_path / "full", tokenizer_dir=tokenizer_dir)
    with pytest.raises(CheckpointError, match="could not load a tokenizer from .*absent"):
        export_hf(run, tmp_path / "none")  # config's model.path does not exist
    with pytest.raises(CheckpointError, match="dtype='int8' is not one of"):
        export_hf(run, tmp_path / "int8", tokenizer_dir=tokenizer_dir, dtype="int8")
    with pytest.raises(CheckpointError, match="tokenizer has 128 tokens but the model's vocab_size is 64"):
        export_hf(run, tmp_path / "big", tokenizer_dir=tiny_model_dir)
    assert not (tmp_path / "none").exists() and not list(tmp_path.glob(".none.tmp-*"))
