"""The tiny reference model and its scorer, loaded once per test module."""

import pytest


@pytest.fixture(scope="session")
def tiny_scorer(tiny_model_dir):
    from meshrl.inputs.models.load import load_causal_lm
    from meshrl.services.reference.scorer import ReferenceScorer

    return ReferenceScorer(load_causal_lm(tiny_model_dir, dtype="float32"), micro_batch_size=3)
