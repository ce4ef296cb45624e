"""Tool-call formats: how a model writes a tool call in its text, by name.

    @register_tool_parser("hermes")
    class HermesParser:
        def parse(self, text: str) -> ParsedTurn: ...
        def tools_system_prompt(self, tools: list[dict]) -> str: ...
        def tool_response_text(self, content: str) -> str: ...
        def call_text(self, name: str, arguments_json: str) -> str: ...

`rollout.agent.tool_parser` names the format (the config checks it against
`meshrl.config.parts.TOOL_PARSERS`, kept equal to this registry by a test). A parser never
raises on what a model wrote: a call it cannot read comes back as a `ParsedCall` with its
`error` set, which the model then reads as an error observation (and which is counted).

Why not vLLM's own tool parsers: they answer all or nothing (one bad call and the turn has
no calls at all) and drop the reason, while a policy being trained needs to read which call
was wrong and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from meshrl.config.parts import unknown_name


@dataclass(frozen=True)
class ParsedCall:
    """One tool call as written. `error` says why it cannot be used ("" when it can);
    `arguments_json` is canonical JSON of an object ("{}" when the call has no arguments);
    `raw_text` the call as the model wrote it, markup included (what an environment is shown
    of a refused call)."""

    name: str
    arguments_json: str = "{}"
    error: str = ""
    raw_text: str = field(default="", compare=False)  # two calls read alike are alike


@dataclass(frozen=True)
class ParsedTurn:
    content: str  # the turn's text outside the tool-call markup
    calls: list[ParsedCall] = field(default_factory=list)


class ToolParser(Protocol):
    name: str

    def parse(self, text: str) -> ParsedTurn: ...

    def tools_system_prompt(self, tools: list[dict]) -> str:
        """The system-prompt text that shows `tools` (OpenAI function dicts) to a model whose
        chat template cannot render them itself."""

    def tool_response_text(self, content: str) -> str:
        """A tool's answer as a user message's text, for a template without a "tool" role."""

    def call_text(self, name: str, arguments_json: str) -> str:
        """One call written in this format (an OpenAI client's tool_calls back into text)."""


TOOL_PARSERS: dict[str, type] = {}  # a plain dict: meshrl.algos' Registry would import torch here


def register_tool_parser(name: str):
    def add(cls):
        if name in TOOL_PARSERS:
            raise ValueError(f"tool-call parser {name!r} is already registered by {TOOL_PARSERS[name].__qualname__}")
        cls.name = name
        TOOL_PARSERS[name] = cls
        return cls

    return add


def get_tool_parser(name: str) -> ToolParser:
    """A new parser of format `name`; a KeyError naming the registered formats otherwise."""
    if name not in TOOL_PARSERS:
        raise KeyError(unknown_name("rollout.agent.tool_parser", name, TOOL_PARSERS, "tool-call format"))
    return TOOL_PARSERS[name]()


def list_tool_parsers() -> list[str]:
    return sorted(TOOL_PARSERS)


from meshrl.services.rollout.agent.parsers import hermes  # noqa: E402,F401  (registers the built-ins)
