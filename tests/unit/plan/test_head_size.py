"""The head-size check against vLLM's CPU kernels, on hand-written configs (no torch)."""

import json

from meshrl.plan.head_size import head_size_problem, model_head_size


def write_config(tmp_path, **config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def test_the_head_size_is_head_dim_else_hidden_over_heads():
    assert model_head_size({"head_dim": 80, "hidden_size": 64, "num_attention_heads": 4}) == 80
    assert model_head_size({"hidden_size": 576, "num_attention_heads": 9}) == 64  # SmolLM2-135M
    assert model_head_size({"text_config": {"hidden_size": 64, "num_attention_heads": 4}}) == 16
    assert model_head_size({}) is None


def test_a_head_size_without_a_cpu_kernel_is_named_only_for_the_cpu_build(tmp_path):
    path = write_config(tmp_path, hidden_size=64, num_attention_heads=4)  # head_dim 16
    problem = head_size_problem(path, cpu_build=True)
    assert problem.startswith(f"model.path={path}: its attention head size (head_dim=16) has no kernel")
    assert "32, 64, 80" in problem and "meshrl models tiny" in problem
    assert head_size_problem(path, cpu_build=False) is None  # a GPU build serves it
    assert head_size_problem(write_config(tmp_path, hidden_size=576, num_attention_heads=9), cpu_build=True) is None
