"""A samples.jsonl row as the dashboard shows it: each turn's observation also as the messages
the environment sent, without the chat template's markup around them.

A turn's "observation" is what the chat template appended after the model's turn, exactly as
the model read it: the end of its turn, the observation's messages with their role headers and
the next assistant header (`<|im_end|>\\n<|im_start|>user\\n<tool_response>\\n42\\n
</tool_response><|im_end|>\\n<|im_start|>assistant\\n`). A reader wants the "42".

    view_row(row)   # the row; each turn with an observation gains "observation_messages":
                    # [{"role": "tool", "content": "42"}]

Simplification: the markup is recognised by shape (ChatML's `<|im_start|>role ... <|im_end|>`,
Llama 3's header ids, Hermes' `<tool_response>` wrapping); any other template's observation
is shown with its `<|...|>` tokens removed.
"""

from __future__ import annotations

import re

MESSAGE = re.compile(
    r"<\|im_start\|>(?P<role>[^\n<]*)\n(?P<content>.*?)(?:<\|im_end\|>|$)"
    r"|<\|start_header_id\|>(?P<role3>[^<]*)<\|end_header_id\|>\n\n(?P<content3>.*?)(?:<\|eot_id\|>|$)",
    re.DOTALL,
)
TOOL_RESPONSE = re.compile(r"^<tool_response>\n?(?P<body>.*?)\n?</tool_response>$", re.DOTALL)
SPECIAL = re.compile(r"<\|[^|<>\s]*\|>")


def message(role: str, content: str) -> dict:
    """A Hermes tool response (a tool message a template without a tool role wraps in a user
    message) is the tool's again."""
    found = TOOL_RESPONSE.match(content.strip())
    if found:
        return {"role": "tool", "content": found["body"]}
    return {"role": role.strip(), "content": content}


def observation_messages(text: str) -> list[dict]:
    """The messages an observation's rendering holds, less the next turn's empty assistant
    header; text in no recognised markup: one message, its special tokens removed."""
    found = [
        message(m["role"] or m["role3"] or "", m["content"] if m["role"] is not None else m["content3"])
        for m in MESSAGE.finditer(text)
    ]
    if found and found[-1]["role"] == "assistant" and not found[-1]["content"].strip():
        found.pop()  # the generation prompt: the model's next turn starts here
    if found:
        return found
    bare = SPECIAL.sub("", text).strip()
    return [{"role": "tool", "content": bare}] if bare else []


def view_row(row: dict) -> dict:
    """The row with each turn's observation also as messages (rows without turns unchanged)."""
    for turn in row.get("turns") or []:
        if isinstance(turn, dict) and isinstance(turn.get("observation"), str) and turn["observation"]:
            turn["observation_messages"] = observation_messages(turn["observation"])
    return row
