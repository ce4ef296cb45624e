"""Shared session fixtures: heavy things are built once per test session.

- `tiny_model_dir`: a tiny random Llama + char-level ChatML tokenizer (meshrl.inputs.models.tiny),
  loadable by transformers and vLLM.
- `tiny_long_model_dir`: the same with 2,048 positions: a prompt with tools rendered in it (the
  tool environments' runs) is ~900 characters, hence tokens, past the 512 of the first.
- `checkpoint_key_file` (autouse): the session's own checkpoint signing key, in the environment
  every process a test starts inherits, so no test writes the user's ~/.config/meshrl.
"""

import os

import pytest

pytest_plugins = ["tests.fixtures.nats", "tests.fixtures.vllm", "tests.fixtures.local_user", "tests.fixtures.ports"]


@pytest.fixture(scope="session", autouse=True)
def checkpoint_key_file(tmp_path_factory):
    """MESHRL_CHECKPOINT_KEY_FILE under the session's tmp dir (made by the first save)."""
    path = tmp_path_factory.mktemp("checkpoint_key") / "checkpoint-signing.key"
    os.environ["MESHRL_CHECKPOINT_KEY_FILE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """Path of a tiny HF model dir, built once per session (≈1 s)."""
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    return build_tiny_model_dir(tmp_path_factory.mktemp("tiny_model"))


@pytest.fixture(scope="session")
def tiny_long_model_dir(tmp_path_factory):
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    return build_tiny_model_dir(tmp_path_factory.mktemp("tiny_long_model"), max_positions=2048)
