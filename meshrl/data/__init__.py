"""Datasets for every service: verl-style prompt rows and DPO pairs, from jsonl or parquet.

- `meshrl.data.rows`: row validation (`DatasetError` names file, line, field and the fix)
- `meshrl.data.load`: `load_rows` / `iter_rows` for .jsonl and .parquet
- `meshrl.data.prompts`: `PromptDataset` (chat template, token ids, pre-training report, cursor)
- `meshrl.data.preferences`: `PreferenceDataset` (DPO prompt/chosen/rejected token ids)
- `meshrl.data.cursor`: `EpochCursor` (epoch, index, seed: the resumable sampling position)
- `meshrl.data.arithmetic`: arithmetic prompts with answers, and DPO preference pairs
"""
from meshrl.data.rows import DatasetError

__all__ = ["DatasetError"]
