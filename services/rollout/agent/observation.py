"""Observations are untrusted text: bounded in tokens and escaped before the model reads them.

An environment (another team's service, or a tool running the model's own code) may answer
anything. Before its text is rendered into the episode:

- **special tokens are escaped**: every added token of the tokenizer spelled in the text
  (`<|im_end|>`, `<|im_start|>`, `<tool_call>`, ...) gets a backslash after its first
  character (`<\\|im_end|>`), so it tokenises as plain characters: it cannot end the turn,
  open a turn with a forged role, or fake a tool call. (`chat_format` checks the result:
  the delta holds exactly the special tokens its template put there.)
- **control characters** (C0 other than tab/newline/CR, and DEL) become U+FFFD.
- **size**: at most `max_tokens` tokens of content per observation (its messages share the
  budget in order); the rest is cut and a short marker (a dozen tokens) says so. Text is cut to
  `max_tokens × 32` characters before tokenising so a 60 MB answer costs no more than a
  small one.

Invalid UTF-8 never reaches here: `env_client` decodes an answer's strings with U+FFFD for
bad bytes (a protobuf string must be UTF-8, and the stock parser would refuse the answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CHARS_PER_TOKEN_CAP = 32  # pre-cut: no tokenizer here has tokens longer than this on average


def control_token_texts(tokenizer) -> list[str]:
    """The text of every added token (special or not) of 2+ characters, longest first."""
    texts = {t.content for t in tokenizer.added_tokens_decoder.values()} | set(tokenizer.all_special_tokens)
    return sorted((t for t in texts if len(t) >= 2), key=len, reverse=True)


class Escaper:
    def __init__(self, tokenizer):
        texts = control_token_texts(tokenizer)
        self.pattern = re.compile("|".join(map(re.escape, texts))) if texts else None

    def __call__(self, text: str) -> tuple[str, int]:
        """(escaped text, how many control tokens were escaped)."""
        text, escaped = CONTROL.sub("\ufffd", text), 0
        while self.pattern is not None:  # an escape never spells a new token; the loop proves it
            text, count = self.pattern.subn(lambda m: m[0][0] + "\\" + m[0][1:], text)
            if not count:
                break
            escaped += count
        return text, escaped


@dataclass
class Bounded:
    messages: list[dict]
    truncated: bool = False
    escaped: int = 0  # control tokens escaped


def bound_messages(messages: list[dict], tokenizer, escaper: Escaper, max_tokens: int) -> Bounded:
    """Escape every message's content and cut the contents to `max_tokens` tokens in all."""
    out, left, truncated, escaped = [], max_tokens, False, 0
    for message in messages:
        content, count = escaper(message["content"][: max_tokens * CHARS_PER_TOKEN_CAP + 1])
        cut = len(message["content"]) > max_tokens * CHARS_PER_TOKEN_CAP
        ids = tokenizer.encode(content, add_special_tokens=False)
        if len(ids) > left or cut:
            kept = ids[:left]
            content = escaper(tokenizer.decode(kept))[0] + f"\n[observation cut: {max_tokens} tokens at most]"
            truncated = True
        left -= min(len(ids), left)
        escaped += count
        out.append({**message, "content": content})
    return Bounded(out, truncated, escaped)
