"""Reference log-probs equal a plain HF forward, one unpadded sequence at a time."""

import numpy as np
import pytest
import torch

from meshrl.config.load import load_config
from meshrl.services.reference.scorer import ReferenceScorer, logprob_temperature
from tests.fixtures.device_trap import default_device_elsewhere


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    from meshrl.inputs.models.load import load_causal_lm

    return load_causal_lm(tiny_model_dir, dtype="float32")


def naive_logprobs(model, prompt, response, temperature):
    """log_softmax(logits / T) of each response token, one sequence, no padding, a loop."""
    ids = torch.tensor(np.concatenate([prompt, response]), dtype=torch.long)[None]
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    out = []
    for t, token in enumerate(response):
        row = torch.log_softmax(logits[len(prompt) - 1 + t] / temperature, dim=-1)
        out.append(row[int(token)].item())
    return np.array(out, dtype=np.float32)


def sequences(seed=0):
    rng = np.random.default_rng(seed)
    prompt_lens, response_lens = [3, 9, 5, 12, 1], [4, 1, 7, 0, 6]
    prompts = [rng.integers(5, 100, n).astype(np.int32) for n in prompt_lens]
    responses = [rng.integers(5, 100, n).astype(np.int32) for n in response_lens]
    return prompts, responses


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_matches_a_naive_hf_forward(tiny_model, temperature):
    prompts, responses = sequences()
    scorer = ReferenceScorer(tiny_model, micro_batch_size=2, temperature=temperature)
    got = scorer.score(prompts, responses)
    assert [len(g) for g in got] == [4, 1, 7, 0, 6]
    for g, p, r in zip(got, prompts, responses):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, naive_logprobs(tiny_model, p, r, temperature), atol=1e-5)


def test_micro_batch_size_does_not_change_the_numbers(tiny_model):
    prompts, responses = sequences(1)
    one = ReferenceScorer(tiny_model, micro_batch_size=1).score(prompts, responses)
    all_ = ReferenceScorer(tiny_model, micro_batch_size=8).score(prompts, responses)
    for a, b in zip(one, all_):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_the_model_is_frozen(tiny_model):
    scorer = ReferenceScorer(tiny_model)
    assert not any(p.requires_grad for p in scorer.model.parameters())
    assert not scorer.model.training


def test_from_config_uses_the_sampling_temperature(tiny_model_dir, tmp_path):
    cfg = load_config(
        base={
            "model": {"path": str(tiny_model_dir)},
            "data": {"train": "x.jsonl"},
            "rollout": {"sampling": {"temperature": 0.5}},
            "reference": {"micro_batch_size": 3},
        }
    )
    scorer = ReferenceScorer.from_config(cfg)
    assert (scorer.temperature, scorer.micro_batch_size) == (0.5, 3)
    assert (
        logprob_temperature(
            cfg.model_copy(
                update={
                    "rollout": cfg.rollout.model_copy(
                        update={"sampling": cfg.rollout.sampling.model_copy(update={"temperature": 0.0})}
                    )
                }
            )
        )
        == 1.0
    )


def test_mismatched_lengths_are_an_error(tiny_model):
    with pytest.raises(ValueError, match="2 prompts and 1 responses"):
        ReferenceScorer(tiny_model).score([np.array([1]), np.array([2])], [np.array([3])])


def test_out_of_vocab_ids_and_empty_prompts_are_errors(tiny_model):
    scorer = ReferenceScorer(tiny_model)
    with pytest.raises(ValueError, match=rf"\[0, {scorer.vocab_size}\).*max {scorer.vocab_size + 5}"):
        scorer.score([np.array([1, 2])], [np.array([scorer.vocab_size + 5])])
    with pytest.raises(ValueError, match="a prompt has no tokens"):
        scorer.score([np.array([], dtype=np.int32)], [np.array([3])])


def test_scores_with_the_default_device_elsewhere(tiny_model):
    """Every tensor is made on the model's device (tests.fixtures.device_trap): on a GPU the
    same code would otherwise mix host and CUDA tensors."""
    prompts, responses = sequences(2)
    expected = ReferenceScorer(tiny_model, micro_batch_size=2).score(prompts, responses)
    with default_device_elsewhere():
        got = ReferenceScorer(tiny_model, micro_batch_size=2).score(prompts, responses)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
