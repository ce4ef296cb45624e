"""PreferenceDataset: responses are what the template adds after the prompt, ending in eos."""

import json

import pytest

from meshrl.inputs.data.preferences import PreferenceDataset
from meshrl.inputs.data.rows import DatasetError
from meshrl.inputs.models.tiny import build_tokenizer

PROMPT = [{"role": "user", "content": "1+1?"}]


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_message_and_string_responses(tmp_path, tok):
    f = write(
        tmp_path / "p.jsonl",
        [
            {
                "prompt": PROMPT,
                "chosen": [{"role": "assistant", "content": "2"}],
                "rejected": [{"role": "assistant", "content": "3"}],
            },
            {"prompt": "1+2?", "chosen": "3", "rejected": "44"},
        ],
    )
    ds = PreferenceDataset.from_file(f, tok, shuffle=False)
    first, second = ds[0], ds[1]
    assert tok.decode(first.prompt_ids) == "<|im_start|>user\n1+1?<|im_end|>\n<|im_start|>assistant\n"
    assert tok.decode(first.chosen_ids) == "2<|im_end|>"  # cut after eos: no trailing "\n"
    assert tok.decode(first.rejected_ids) == "3<|im_end|>"
    assert tok.decode(second.rejected_ids) == "44<|im_end|>"
    assert len(second.prompt_ids) == 19 + 4
    rep = ds.report()
    assert rep.response_tokens == {
        "chosen": {"min": 2, "mean": 2.0, "p95": 2.0, "max": 2},
        "rejected": {"min": 2, "mean": 2.5, "p95": 2.95, "max": 3},
    }


def test_long_responses_dropped_or_refused(tmp_path, tok):
    f = write(
        tmp_path / "p.jsonl",
        [{"prompt": "q", "chosen": "a", "rejected": "b"}, {"prompt": "q", "chosen": "a" * 10, "rejected": "b"}],
    )
    ds = PreferenceDataset.from_file(f, tok, max_response_tokens=5)
    assert (len(ds), ds.report().over_limit) == (1, 1)
    with pytest.raises(DatasetError, match=r"1 pairs exceed .*p.jsonl line 2"):
        PreferenceDataset.from_file(f, tok, max_response_tokens=5, over_limit="error")


def test_cursor_resumes(tmp_path, tok):
    from meshrl.inputs.data.arithmetic import write_pairs

    f = tmp_path / "pairs.jsonl"
    write_pairs(f, n=5, seed=1)
    a = PreferenceDataset.from_file(f, tok, seed=3)
    a.next_batch(3)
    b = PreferenceDataset.from_file(f, tok, seed=3)
    b.load_state_dict(a.state_dict())
    assert [x.row.ref for x in a.next_batch(4)] == [x.row.ref for x in b.next_batch(4)]
