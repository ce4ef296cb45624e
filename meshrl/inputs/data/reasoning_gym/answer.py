"""Where a completion's answer is, for reasoning-gym rows: the text inside the last
`<answer>...</answer>` pair (reasoning-gym's own convention: its system prompts ask for it and
its `extract_answer` reads it the same way: the last pair, one optional space trimmed inside each
tag, then stripped). No pair: no answer (None), which every task's score_answer scores 0.0.

    extract_answer("I think <answer>7</answer>")   -> "7"
    extract_answer("<answer>1</answer> no, <answer> 2 </answer>") -> "2"
    extract_answer("7")                            -> None
"""

from __future__ import annotations

import re

TAG = "answer"
_ANSWER = re.compile(rf"<{TAG}>\s?(.*?)\s?</{TAG}>", re.DOTALL)


def extract_answer(completion: str) -> str | None:
    matches = _ANSWER.findall(completion)
    return matches[-1].strip() if matches else None
