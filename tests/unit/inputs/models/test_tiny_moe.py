"""The tiny MoE: a Qwen3-MoE transformers loads; the weights pushed to rollout carry the
checkpoint's per-expert names and values (transformers fuses experts in memory); the router
statistics on a router whose picks are known; the MoE + token-level-ratio warning."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from meshrl.config import load_config
from meshrl.inputs.models.moe import experts_of, moe_ratio_warning
from meshrl.inputs.models.tiny_moe import build_tiny_moe_model_dir
from meshrl.services.learner.build import checkpoint_format
from meshrl.services.learner.router_stats import RouterStats, with_router_stats


@pytest.fixture(scope="module")
def moe_dir(tmp_path_factory):
    return build_tiny_moe_model_dir(tmp_path_factory.mktemp("moe"))


def test_the_pushed_state_has_the_checkpoints_names_and_values(moe_dir):
    from safetensors.torch import load_file

    model = AutoModelForCausalLM.from_pretrained(moe_dir)
    pushed = checkpoint_format(model, {k: v.detach() for k, v in model.state_dict().items()})
    saved = load_file(str(moe_dir / "model.safetensors"))
    assert "model.layers.0.mlp.experts.gate_up_proj" in model.state_dict()  # fused in memory
    assert set(saved) <= set(pushed) and set(pushed) - set(saved) == {"lm_head.weight"}  # tied
    assert all(torch.equal(pushed[k], saved[k]) for k in saved)


def test_router_stats_on_a_router_with_known_picks():
    class Router(torch.nn.Module):  # a fake router of a fixed choice, named as such
        top_k, num_experts = 1, 4
        weight = torch.zeros(4, 2)

        def forward(self, x):
            logits = torch.zeros(x.shape[0], 4)  # uniform probabilities: P_i = 1/4
            return logits, None, torch.tensor([[0], [0], [0], [1]])  # f = (3/4, 1/4, 0, 0)

    model = torch.nn.Sequential(Router())
    step = with_router_stats(lambda batch, i: {"loss": 1.0} if model[0](torch.zeros(4, 2)) else {}, model)
    metrics = step(None, 0)
    assert metrics["moe/aux_loss"] == pytest.approx(4 * (0.75 * 0.25 + 0.25 * 0.25))  # = 1 with uniform P
    assert metrics["moe/load_max"] == pytest.approx(3.0) and metrics["moe/load_min"] == 0.0
    assert step(None, 1)["moe/load_max"] == pytest.approx(3.0)  # counts start afresh each step


def test_a_dense_model_has_no_router_stats(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    train_step = lambda batch, i: {}  # noqa: E731
    assert with_router_stats(train_step, model) is train_step and not RouterStats(model).routers


def test_the_moe_model_is_routed_over_its_experts(moe_dir):
    model = AutoModelForCausalLM.from_pretrained(moe_dir)
    stats = RouterStats(model)
    assert len(stats.routers) == 2 and stats.experts == 8
    model(torch.randint(5, 100, (2, 16)))
    metrics = stats.take()
    assert 1.0 <= metrics["moe/load_max"] <= 4.0 and 0.9 < metrics["moe/aux_loss"] < 1.5


def run_config(model_dir, *overrides):
    return load_config(
        base={"model": {"path": str(model_dir)}, "data": {"train": "t.jsonl"}}, overrides=list(overrides)
    )


def test_moe_with_a_token_level_ratio_is_warned_and_gspo_is_not(moe_dir, tiny_model_dir):
    assert experts_of(str(moe_dir)) == 8 and experts_of(str(tiny_model_dir)) == 0
    warning = moe_ratio_warning(run_config(moe_dir, "algorithm.preset=grpo"))
    assert "mixture-of-experts model (8 experts per layer)" in warning and "algorithm.preset=gspo" in warning
    assert moe_ratio_warning(run_config(moe_dir, "algorithm.preset=gspo")) is None
    assert moe_ratio_warning(run_config(tiny_model_dir, "algorithm.preset=grpo")) is None


def test_dry_run_and_doctor_say_it(moe_dir, capsys):
    from meshrl.cli.doctor.checks_model import check_model
    from meshrl.cli.main import main

    assert (
        main(
            ["train", "--dry-run", "/dev/null", f"model.path={moe_dir}", "data.train=t.jsonl", "algorithm.preset=grpo"]
        )
        == 0
    )
    assert "warning: model.path is a mixture-of-experts model" in capsys.readouterr().err

    class Ctx:  # the doctor's context, with only what the model check reads
        config = run_config(moe_dir, "algorithm.preset=dapo")
        parameters = 0

    found, warned = check_model(Ctx())
    assert found.status == "pass" and warned.status == "warn" and warned.ok
    assert "algorithm.policy_loss=ppo" in warned.fix
