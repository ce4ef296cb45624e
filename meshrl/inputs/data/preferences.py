"""DPO pairs → token ids: prompt, chosen response and rejected response, with a report.

Each of `prompt`, `chosen`, `rejected` may be a string or chat messages (TRL's convention).
The prompt is rendered with the chat template and `add_generation_prompt=True` (a string
becomes one user message). A response is what the template adds after that prompt:
render(prompt + response messages) minus render(prompt), cut right after the end-of-turn
token (so it ends with eos, as a sampled response would); a string response is the string
plus the eos token. Rows longer than the limits are dropped or refused, like prompts.

Usage:
    pairs = PreferenceDataset.from_file("data/pairs.jsonl", tokenizer, max_prompt_tokens=256)
    batch_items = pairs.next_batch(8)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from meshrl.inputs.data.cursor import EpochCursor
from meshrl.inputs.data.load import load_rows
from meshrl.inputs.data.report import DatasetReport, length_stats
from meshrl.inputs.data.rows import DatasetError, PreferenceRow


@dataclass(frozen=True)
class PreferenceItem:
    row: PreferenceRow
    prompt_ids: list[int]
    chosen_ids: list[int]
    rejected_ids: list[int]


def as_chat(value, role: str) -> list[dict]:
    return [{"role": role, "content": value}] if isinstance(value, str) else value


def response_texts(tokenizer, rows: list[PreferenceRow], prompts: list[str], side: str) -> list[str]:
    """The text each `side` ("chosen" / "rejected") response adds after its rendered prompt."""
    eos = tokenizer.eos_token
    chats = [as_chat(r.prompt, "user") + as_chat(getattr(r, side), "assistant") for r in rows]
    full = tokenizer.apply_chat_template(chats, tokenize=False)
    texts = []
    for row, prompt, whole in zip(rows, prompts, full):
        if isinstance(getattr(row, side), str):
            texts.append(getattr(row, side) + eos)
            continue
        if not whole.startswith(prompt):
            raise DatasetError(
                f"{row.ref}: the chat template does not render the prompt as a "
                f"prefix of prompt + {side}; give {side} as a plain string"
            )
        rest = whole[len(prompt) :]
        texts.append(rest[: rest.index(eos) + len(eos)] if eos in rest else rest + eos)
    return texts


def tokenize_pairs(tokenizer, rows: list[PreferenceRow]):
    """Token id lists (prompt, chosen, rejected), each in one batched tokenizer call."""
    if not getattr(tokenizer, "chat_template", None):
        raise DatasetError("the tokenizer has no chat template; DPO rows need one to render")
    prompts = tokenizer.apply_chat_template(
        [as_chat(r.prompt, "user") for r in rows], add_generation_prompt=True, tokenize=False
    )

    def encode(texts):
        return tokenizer(texts, add_special_tokens=False)["input_ids"]

    return (
        encode(prompts),
        encode(response_texts(tokenizer, rows, prompts, "chosen")),
        encode(response_texts(tokenizer, rows, prompts, "rejected")),
    )


def token_lengths(prompt_ids, chosen_ids, rejected_ids) -> dict[str, np.ndarray]:
    """Tokens per row of each side: "prompt", "chosen", "rejected"."""
    sides = (("prompt", prompt_ids), ("chosen", chosen_ids), ("rejected", rejected_ids))
    return {side: np.array([len(x) for x in ids], dtype=np.int64) for side, ids in sides}


def over_limits(rows, lens: dict[str, np.ndarray], max_prompt_tokens: int, max_response_tokens: int, over_limit: str):
    """(the pairs over a limit [N] bool, up to five of their refs); refused when `over_limit` is "error"."""
    over = (
        (lens["prompt"] > max_prompt_tokens)
        | (lens["chosen"] > max_response_tokens)
        | (lens["rejected"] > max_response_tokens)
    )
    examples = [str(rows[i].ref) for i in np.flatnonzero(over)[:5]]
    if over.any() and over_limit == "error":
        raise DatasetError(
            f"{int(over.sum())} pairs exceed max_prompt_tokens="
            f"{max_prompt_tokens} or max_response_tokens={max_response_tokens} "
            f"(e.g. {examples}); raise the limits or shorten them"
        )
    return over, examples


class PreferenceDataset:
    """Tokenized DPO pairs of one file, a report about them, and a resumable cursor."""

    def __init__(
        self,
        rows: list[PreferenceRow],
        tokenizer,
        *,
        max_prompt_tokens: int = 256,
        max_response_tokens: int = 256,
        over_limit: str = "drop",
        shuffle: bool = True,
        seed: int = 0,
        source: str = "<rows>",
    ):
        ids = tokenize_pairs(tokenizer, rows) if rows else ([],) * 3
        lens = token_lengths(*ids)
        over, examples = over_limits(rows, lens, max_prompt_tokens, max_response_tokens, over_limit)
        self.items = [PreferenceItem(rows[i], *(side[i] for side in ids)) for i in np.flatnonzero(~over)]
        self._report = DatasetReport(
            file=source,
            rows=len(rows),
            kept=len(self.items),
            max_prompt_tokens=max_prompt_tokens,
            over_limit=int(over.sum()),
            over_limit_examples=examples,
            prompt_tokens=length_stats(lens["prompt"]),
            response_tokens={k: length_stats(lens[k]) for k in ("chosen", "rejected")},
        )
        self.cursor = EpochCursor(len(self.items), seed=seed, shuffle=shuffle)

    @classmethod
    def from_file(cls, path: str | Path, tokenizer, **kwargs) -> "PreferenceDataset":
        return cls(load_rows(path, kind="dpo"), tokenizer, source=str(path), **kwargs)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> PreferenceItem:
        return self.items[i]

    def report(self) -> DatasetReport:
        return self._report

    def next_batch(self, k: int) -> list[PreferenceItem]:
        return [self.items[i] for i in self.cursor.take(k)]

    def state_dict(self) -> dict:
        return self.cursor.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.cursor.load_state_dict(state)
