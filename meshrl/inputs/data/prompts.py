"""Prompt rows → token ids, with a pre-training report and a resumable sampling cursor.

`PromptDataset.from_file(path, tokenizer, max_prompt_tokens=256)` reads a verl-style file,
renders each prompt with the tokenizer's chat template (`add_generation_prompt=True`; a plain
string prompt becomes one user message), tokenizes all prompts in one batched call (no special
tokens added: the template already has them), drops or refuses rows longer than
`max_prompt_tokens`, and keeps a `DatasetReport`. `next_batch(k)` hands out rows in an
epoch-shuffled order whose position (`state_dict()`) a checkpoint saves and restores.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from meshrl.inputs.data.cursor import EpochCursor
from meshrl.inputs.data.load import iter_rows
from meshrl.inputs.data.report import DatasetReport, length_stats, missing_optional_counts
from meshrl.inputs.data.rows import DatasetError, PromptRow, prompt_row_problems, validate_prompt_row


@dataclass(frozen=True)
class PromptItem:
    """One prompt ready for rollout: the row, the rendered text and its token ids."""

    row: PromptRow
    text: str
    prompt_ids: list[int]


def render_prompts(tokenizer, rows: list[PromptRow], apply_chat_template: bool) -> list[str]:
    """The text each prompt becomes before tokenization."""
    if not apply_chat_template:
        return [r.prompt if isinstance(r.prompt, str) else "\n".join(m["content"] for m in r.prompt) for r in rows]
    if not getattr(tokenizer, "chat_template", None):
        raise DatasetError(
            "the tokenizer has no chat template; use an instruct model's "
            "tokenizer or set data.apply_chat_template=false"
        )
    chats = [[{"role": "user", "content": r.prompt}] if isinstance(r.prompt, str) else r.prompt for r in rows]
    return tokenizer.apply_chat_template(chats, add_generation_prompt=True, tokenize=False)


def tokenize_prompts(tokenizer, rows: list[PromptRow], apply_chat_template: bool):
    """(texts, token id lists, lengths array) in one batched tokenizer call."""
    if not rows:
        return [], [], np.zeros(0, dtype=np.int64)
    texts = render_prompts(tokenizer, rows, apply_chat_template)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    return texts, ids, np.array([len(x) for x in ids], dtype=np.int64)


def read_prompt_rows(path, on_invalid: str) -> tuple[list[PromptRow], int, Counter]:
    """Validated rows, rows read, and problem counts per field (rows dropped when "drop")."""
    if on_invalid not in ("error", "drop"):
        raise DatasetError(f"on_invalid={on_invalid!r}: use 'error' or 'drop'")
    rows, read, problems = [], 0, Counter()
    for ref, raw in iter_rows(path):
        read += 1
        found = prompt_row_problems(raw)
        if found and on_invalid == "drop":
            problems.update({name for name, _ in found})
            continue
        rows.append(validate_prompt_row(raw, ref))
    return rows, read, problems


def over_limit_fields(rows: list[PromptRow], lengths: np.ndarray, max_prompt_tokens: int, over_limit: str) -> dict:
    """The report's count and examples of prompts over the limit; refused when `over_limit` is "error"."""
    over = np.flatnonzero(lengths > max_prompt_tokens)
    examples = [f"{rows[i].ref}: {lengths[i]} tokens" for i in over[:5]]
    if len(over) and over_limit == "error":
        raise DatasetError(
            f"{len(over)} prompts exceed max_prompt_tokens={max_prompt_tokens} "
            f"(e.g. {examples}); raise data.max_prompt_tokens or shorten them"
        )
    return {"over_limit": len(over), "over_limit_examples": examples}


class PromptDataset:
    """Tokenized prompts of one file, a report about them, and a resumable cursor."""

    def __init__(
        self,
        rows: list[PromptRow],
        tokenizer,
        *,
        max_prompt_tokens: int = 256,
        over_limit: Literal["drop", "error"] = "drop",
        apply_chat_template: bool = True,
        shuffle: bool = True,
        seed: int = 0,
        source: str = "<rows>",
        rows_read: int | None = None,
        invalid_fields: Counter | None = None,
    ):
        texts, ids, lengths = tokenize_prompts(tokenizer, rows, apply_chat_template)
        over_fields = over_limit_fields(rows, lengths, max_prompt_tokens, over_limit)
        self.items = [PromptItem(rows[i], texts[i], ids[i]) for i in np.flatnonzero(lengths <= max_prompt_tokens)]
        read = len(rows) if rows_read is None else rows_read
        self._report = DatasetReport(
            file=source,
            rows=read,
            kept=len(self.items),
            max_prompt_tokens=max_prompt_tokens,
            **over_fields,
            invalid=read - len(rows),
            invalid_fields=dict(invalid_fields or {}),
            prompt_tokens=length_stats(lengths),
            missing_optional=missing_optional_counts(rows),
        )
        self.cursor = EpochCursor(len(self.items), seed=seed, shuffle=shuffle)

    @classmethod
    def from_file(cls, path: str | Path, tokenizer, *, on_invalid: str = "error", **kwargs):
        """Read, validate and tokenize a .jsonl/.parquet file (see the class for kwargs)."""
        rows, read, problems = read_prompt_rows(path, on_invalid)
        return cls(rows, tokenizer, source=str(path), rows_read=read, invalid_fields=problems, **kwargs)

    @classmethod
    def from_config(cls, data, tokenizer, *, seed: int = 0, split: str = "train"):
        """From a `meshrl.config.DataConfig` (`split` "train" or "eval"; eval is not shuffled)."""
        path = data.train if split == "train" else data.eval
        if path is None:
            raise DatasetError(f"data.{split} is not set; name a .jsonl or .parquet file")
        return cls.from_file(
            path,
            tokenizer,
            max_prompt_tokens=data.max_prompt_tokens,
            apply_chat_template=data.apply_chat_template,
            shuffle=data.shuffle and split == "train",
            seed=seed,
        )

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> PromptItem:
        return self.items[i]

    def report(self) -> DatasetReport:
        return self._report

    def next_batch(self, k: int) -> list[PromptItem]:
        """The next `k` prompts in epoch-shuffled order (wrapping into the next epoch)."""
        return [self.items[i] for i in self.next_indices(k)]

    def next_indices(self, k: int) -> list[int]:
        """Positions (into this dataset) of the next `k` prompts, advancing the cursor."""
        return [int(i) for i in self.cursor.take(k)]

    def state_dict(self) -> dict:
        return self.cursor.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.cursor.load_state_dict(state)
