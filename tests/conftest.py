"""Shared session fixtures: heavy things are built once per test session.

- `tiny_model_dir`: a tiny random Llama + char-level ChatML tokenizer (meshrl.inputs.models.tiny),
  loadable by transformers and vLLM.
- `tiny_long_model_dir`: the same with 2,048 positions: a prompt with tools rendered in it (the
  tool environments' runs) is ~900 characters, hence tokens, past the 512 of the first.
"""

import pytest

pytest_plugins = ["tests.fixtures.nats", "tests.fixtures.vllm", "tests.fixtures.local_user"]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """Path of a tiny HF model dir, built once per session (≈1 s)."""
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    return build_tiny_model_dir(tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture(scope="session")
def tiny_long_model_dir(tmp_path_factory):
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    return build_tiny_model_dir(tmp_path_factory.mktemp("tiny_long_model"), max_positions=2048)
