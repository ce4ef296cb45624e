"""`regex`: a format reward. `match` when `pattern` is found in the response, else `no_match`.

`fullmatch: true` requires the whole (stripped) response to match; `flags` are any of
"i" (ignore case), "s" (dot matches newline), "m" (multiline). Example, R1-style format:
`pattern: "^<think>.*</think>\\s*<answer>.*</answer>$"`, `flags: "s"`, `fullmatch: true`.
"""
import re

from pydantic import field_validator

from meshrl.services.reward.registry import RuleParams, register_reward
from meshrl.services.reward.types import RewardItem

FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE}


class RegexParams(RuleParams):
    pattern: str
    flags: str = ""
    fullmatch: bool = False
    match: float = 1.0
    no_match: float = 0.0

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as err:
            raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {err}") from None
        return pattern

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, flags: str) -> str:
        unknown = set(flags) - set(FLAGS)
        if unknown:
            raise ValueError(f"unknown regex flags {sorted(unknown)}; allowed: i, s, m")
        return flags

    def compiled(self) -> re.Pattern:
        flags = 0
        for letter in self.flags:
            flags |= FLAGS[letter]
        return re.compile(self.pattern, flags)


@register_reward("regex", params=RegexParams)
def regex_format(items: list[RewardItem], params: RegexParams) -> list[float]:
    pattern = params.compiled()
    if params.fullmatch:
        hits = [pattern.fullmatch(it.response.strip()) for it in items]
    else:
        hits = [pattern.search(it.response) for it in items]
    return [params.match if hit else params.no_match for hit in hits]
