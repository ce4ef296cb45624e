"""jsonl and parquet read back what was written; wrong paths say what to do."""

import pytest

from meshrl.inputs.data.arithmetic import arithmetic_rows, preference_pairs
from meshrl.inputs.data.load import iter_rows, load_rows, write_rows
from meshrl.inputs.data.rows import DatasetError


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_round_trip_prompt_rows(tmp_path, suffix):
    rows = arithmetic_rows(5, seed=1)
    f = write_rows(tmp_path / f"train{suffix}", rows)
    assert load_rows(f, kind=None) == rows
    loaded = load_rows(f)
    assert [r.ground_truth for r in loaded] == [r["reward_model"]["ground_truth"] for r in rows]
    assert loaded[2].prompt == rows[2]["prompt"] and loaded[2].extra_info["index"] == 2
    first = 1 if suffix == ".jsonl" else 0
    assert [ref.index for ref, _ in iter_rows(f)] == list(range(first, first + 5))


def test_round_trip_dpo_rows_parquet(tmp_path):
    rows = preference_pairs(4, seed=2)
    loaded = load_rows(write_rows(tmp_path / "pairs.parquet", rows), kind="dpo")
    assert [r.chosen for r in loaded] == [r["chosen"] for r in rows]
    assert [r.rejected for r in loaded] == [r["rejected"] for r in rows]


def test_parquet_streams_in_batches(tmp_path):
    from meshrl.inputs.data.load import _iter_parquet

    f = write_rows(tmp_path / "big.parquet", arithmetic_rows(10))
    refs = [ref.index for ref, _ in _iter_parquet(f, batch_size=3)]  # 4 batches: 3+3+3+1
    assert refs == list(range(10))


def test_missing_file_and_wrong_suffix(tmp_path):
    with pytest.raises(DatasetError, match=r"nope.jsonl does not exist; set data.train"):
        load_rows(tmp_path / "nope.jsonl")
    with pytest.raises(DatasetError, match=r"unsupported file type '.csv'"):
        load_rows(tmp_path / "x.csv")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(DatasetError, match="bad.parquet: not a readable parquet file"):
        load_rows(bad)
