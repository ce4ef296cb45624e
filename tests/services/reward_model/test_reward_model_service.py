"""The reward-model service end to end on a real port: a tiny BERT sequence-classification
model and a word-level tokenizer built in the test (no hub), served through the reward SDK
and called by the mesh's ExternalComponent. Scores must equal the model's own logits
computed one text at a time (padding in the batch changes nothing), all items of a call go
through one forward pass, and normalisation + clipping apply."""

import pytest
from tokenizers import Tokenizer, models
from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

from meshrl.config.schema import RewardComponentConfig
from meshrl.reward_sdk import start
from meshrl.services.reward.external import ExternalComponent, check_reachable
from meshrl.services.reward.types import RewardItem, Status
from meshrl.services.reward_model.batcher import reward_fn
from meshrl.services.reward_model.main import main
from meshrl.services.reward_model.model import RewardModel
from meshrl.services.reward_model.normalize import RewardNormalizer
from tests.fixtures.tiny_reward_model import build_tiny_reward_model

ITEMS = [
    RewardItem(id="g/0", prompt="what is 3+4 ? ", response="the answer is 7"),
    RewardItem(id="g/1", prompt="what is 3+4 ? ", response="8"),
    RewardItem(id="g/2", prompt="what is 3+4 ? ", response="maybe seven maybe 8 maybe"),
]


@pytest.fixture(scope="module")
def tiny_rm(tmp_path_factory) -> str:
    return build_tiny_reward_model(tmp_path_factory.mktemp("tiny_rm"))


def one_by_one(path: str) -> list[float]:
    """The model's logit for each text alone (no padding): what the service must return."""
    rm = RewardModel(path, device="cpu")
    return [rm.score([f"{it.prompt}{it.response}"])[0] for it in ITEMS]


async def score_through_service(path: str, normalizer: RewardNormalizer):
    fn = reward_fn(RewardModel(path, device="cpu"), normalizer, max_batch=32)
    server, port = await start(fn, port=0)
    comp = ExternalComponent.from_config(
        RewardComponentConfig(name="rm", kind="external", address=f"127.0.0.1:{port}", timeout_s=30.0)
    )
    try:
        await check_reachable(comp, within_s=10.0)
        return await comp.score(ITEMS), fn.batcher.sizes
    finally:
        await comp.close()
        await fn.batcher.close()
        await server.stop(0)


async def test_scores_are_the_models_logits_in_one_batch(tiny_rm):
    scores, sizes = await score_through_service(tiny_rm, RewardNormalizer())
    expected = one_by_one(tiny_rm)
    assert [s.status for s in scores] == [Status.OK] * 3
    assert [s.value for s in scores] == pytest.approx(expected, abs=1e-5)
    assert [s.details["raw_score"] for s in scores] == pytest.approx(expected, abs=1e-5)
    assert sizes == [3]
    assert len({round(v, 6) for v in expected}) == 3  # the texts really score differently


async def test_running_normalisation_and_clip(tiny_rm):
    scores, _ = await score_through_service(tiny_rm, RewardNormalizer("running", clip=1.0))
    raw = one_by_one(tiny_rm)
    mean = sum(raw) / 3
    std = (sum((x - mean) ** 2 for x in raw) / 3 + 1e-8) ** 0.5
    assert [s.value for s in scores] == pytest.approx([max(-1.0, min(1.0, (x - mean) / std)) for x in raw], abs=1e-4)


def test_a_model_without_a_scalar_head_is_refused(tmp_path, capsys):
    cfg = BertConfig(
        vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8, num_labels=3
    )
    BertForSequenceClassification(cfg).save_pretrained(tmp_path)
    tok = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1}, unk_token="[UNK]"))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]").save_pretrained(tmp_path)
    assert main(["--model", str(tmp_path), "--port", "0"]) == 2
    assert "num_labels=3: a reward model needs one output" in capsys.readouterr().err
