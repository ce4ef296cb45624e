"""Tool-call formats: how a model writes a tool call in its text, by name.

    @register_tool_parser("hermes")
    class HermesParser:
        def parse(self, text: str) -> ParsedTurn: ...
        def tools_system_prompt(self, tools: list[dict]) -> str: ...
        def tool_response_text(self, content: str) -> str: ...
        def call_text(self, name: str, arguments_json: str) -> str: ...

`rollout.agent.tool_parser` names the format (the torch-free config checks it against the
parts table, written from this registry). Every file of this folder is imported on the first
lookup, so a new file is a new format. A parser never
raises on what a model wrote: a call it cannot read comes back as a `ParsedCall` with its
`error` set, which the model then reads as an error observation (and which is counted).

Why not vLLM's own tool parsers: they answer all or nothing (one bad call and the turn has
no calls at all) and drop the reason, while a policy being trained needs to read which call
was wrong and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from meshrl.registry import Registry


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


TOOL_PARSERS = Registry(
    "tool-call format", decorator="register_tool_parser", folder="meshrl.services.rollout.agent.parsers"
)


def register_tool_parser(name: str):
    """Decorator: register the class as tool-call format `name` (and give it that `name`)."""

    def add(cls):
        cls.name = name
        return TOOL_PARSERS.add(name, cls)

    return add


def get_tool_parser(name: str) -> ToolParser:
    """A new parser of format `name`; an UnknownNameError (a KeyError) naming the formats otherwise."""
    return TOOL_PARSERS.get(name)()


def list_tool_parsers() -> list[str]:
    return TOOL_PARSERS.names()
