"""The `params:` of each built-in reward rule, as config: checked when the config loads, so a
typo (`{patern: ...}`) or a regex that does not compile is refused before anything starts,
not when the reward service starts (after NATS, the rollout and vLLM).

    reward:
      components:
        - {name: format, kind: regex, params: {pattern: "<answer>.*</answer>", flags: s}}

The rules themselves (services/reward/rules/) register these classes with their decorator
(`@register_reward("regex", params=RegexParams)`); a rule kind not listed in RULE_PARAMS
has its params checked when the reward service starts. Never imports torch or a service.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from meshrl.config.parts import ENVIRONMENT_CREDITS


class RuleParams(BaseModel):
    """Base for every rule's params: unknown keys and NaN or ±inf numbers are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # as meshrl.config


class ExactMatchParams(RuleParams):
    case_sensitive: bool = False
    strip: bool = True
    match: float = 1.0
    no_match: float = 0.0


class MathVerifyParams(RuleParams):
    timeout_s: float = Field(5.0, gt=0.0)  # per item, our own deadline
    workers: int = Field(2, ge=1, le=64)  # verifier processes (shared by all math_verify components)
    correct: float = 1.0
    incorrect: float = 0.0


REGEX_FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "m": re.MULTILINE}
MAX_PATTERN_CHARS = 4096


class RegexParams(RuleParams):
    pattern: str = Field(max_length=MAX_PATTERN_CHARS)
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
        unknown = set(flags) - set(REGEX_FLAGS)
        if unknown:
            raise ValueError(f"unknown regex flags {sorted(unknown)}; allowed: i, s, m")
        return flags

    def compiled(self) -> re.Pattern:
        flags = 0
        for letter in self.flags:
            flags |= REGEX_FLAGS[letter]
        return re.compile(self.pattern, flags)


class LengthPenaltyParams(RuleParams):
    unit: Literal["chars", "tokens"] = "chars"
    max_len: int | None = Field(None, ge=1)
    buffer: int | None = Field(None, ge=1)
    target: int | None = Field(None, ge=1)
    penalty: float = Field(1.0, ge=0.0)

    @model_validator(mode="after")
    def _one_mode(self) -> "LengthPenaltyParams":
        if (self.max_len is None) == (self.target is None):
            raise ValueError("set exactly one of max_len (cap mode) or target (target mode)")
        if self.buffer is not None and (self.max_len is None or self.buffer > self.max_len):
            raise ValueError("buffer needs max_len and must be <= max_len")
        return self


class EnvironmentParams(RuleParams):
    credit: Literal[ENVIRONMENT_CREDITS] = "turn"
    # The score of an episode meshrl ended at its limits (max_turns, token budget, context)
    # before the environment rewarded it: ran out of moves without an answer. None: an error
    # (the group then goes by on_failure: dropped by default, so the policy is never told).
    truncated: float | None = 0.0


class ReasoningGymParams(RuleParams):
    # The reasoning-gym venv's python; None: $MESHRL_ADAPTER_VENVS/reasoning_gym/bin/python, else
    # .venv-adapters/reasoning_gym/bin/python in meshrl's checkout (bash scripts/adapter_venv.sh reasoning_gym).
    python: str | None = None
    timeout_s: float = Field(30.0, gt=0.0)  # per batch sent to the scorer process (killed and restarted past it)


RULE_PARAMS: dict[str, type[RuleParams]] = {
    "exact_match": ExactMatchParams,
    "math_verify": MathVerifyParams,
    "regex": RegexParams,
    "length_penalty": LengthPenaltyParams,
    "environment": EnvironmentParams,
    "reasoning_gym": ReasoningGymParams,
}


def parse_rule_params(model: type[RuleParams], kind: str, component: str, raw: dict | None) -> RuleParams:
    """`raw` as `model`; ValueError naming the component, each problem and the allowed params."""
    try:
        return model.model_validate(raw or {})
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(params)'}: {e['msg']}" for e in err.errors())
        fields = ", ".join(model.model_fields) or "(none)"
        raise ValueError(
            f"reward.components[{component}].params for kind {kind!r} are invalid: {problems}. Allowed params: {fields}"
        ) from None


def check_rule_params(kind: str, component: str, raw: dict | None) -> None:
    """ValueError when a built-in rule's params do not fit its schema (others: at service start)."""
    if kind in RULE_PARAMS:
        parse_rule_params(RULE_PARAMS[kind], kind, component, raw)
