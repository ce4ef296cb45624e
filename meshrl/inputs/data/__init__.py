"""Datasets for every service: verl-style prompt rows and DPO pairs, from jsonl or parquet.

- `meshrl.inputs.data.rows`: row validation (`DatasetError` names file, line, field and the fix)
- `meshrl.inputs.data.load`: `load_rows` / `iter_rows` for .jsonl and .parquet
- `meshrl.inputs.data.prompts`: `PromptDataset` (chat template, token ids, pre-training report, cursor)
- `meshrl.inputs.data.preferences`: `PreferenceDataset` (DPO prompt/chosen/rejected token ids)
- `meshrl.inputs.data.cursor`: `EpochCursor` (epoch, index, seed: the resumable sampling position)
- `meshrl.inputs.data.arithmetic`: arithmetic prompts with answers, and DPO preference pairs
"""

from meshrl.inputs.data.rows import DatasetError

__all__ = ["DatasetError"]
