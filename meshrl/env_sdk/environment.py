"""`Environment`: the base class an environment's author subclasses; one instance per episode.

    class Arith(Environment):
        tools = [calculator]                    # plain functions (or FunctionTool)
        def reset(self, task):                  # -> None, [observation...] or Reset(...)
            self.answer = task.ground_truth
        def step(self, turn):                   # -> Step(...) or [observation...]
            if turn.tried_tools:                # calls sent, or refused by meshrl: not an answer
                return Step(self.call_tools(turn))
            return Step(done=True, reward=float(turn.text.strip() == self.answer))

`reset`, `step` and `close` may be plain methods (run in the server's thread pool) or
`async def` (awaited on its event loop). The server calls them for one episode at a time,
in order, so an instance needs no locks. The default `step` answers the turn's tool calls
and never ends the episode: a stateless tool server is `class Tools(Environment): tools = [...]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from meshrl.env_sdk.messages import Message, ToolCall, tool_result
from meshrl.env_sdk.task import Task, Turn
from meshrl.env_sdk.tools import FunctionTool, ToolCallError, as_tool


@dataclass
class Reset:
    observation: Sequence[Message | str | dict] = ()  # read after the prompt, before turn 0
    tools: Sequence[Any] | None = None  # None: the class's `tools`
    info: dict[str, Any] | None = None


@dataclass
class Step:
    observation: Sequence[Message | str | dict] = ()
    reward: float | None = None  # this turn's; the episode's is the sum
    done: bool = False
    info: dict[str, Any] | None = field(default=None)


class Environment:
    name: ClassVar[str] = ""  # what ResetRequest.environment names; "" = the class name
    tools: ClassVar[Sequence[Any]] = ()
    tool_table: ClassVar[dict[str, FunctionTool]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.tool_table = tool_table(cls.tools, cls.__name__)
        cls.name = cls.__dict__.get("name") or cls.__name__

    def __init__(self) -> None:
        self.task: Task | None = None  # set by the server before reset
        self.tool_errors = 0  # tool calls answered with an error so far

    def reset(self, task: Task) -> Reset | Sequence[Message | str | dict] | None:
        return None

    def step(self, turn: Turn) -> Step | Sequence[Message | str | dict]:
        return Step(self.call_tools(turn), info={"tool_errors": self.tool_errors})

    def close(self) -> None:
        return None

    def answer_call(self, call: ToolCall) -> str:
        """The tool's answer to one call, or an error text the model can act on."""
        tool = self.tool_table.get(call.name)
        if tool is None:
            self.tool_errors += 1
            offered = ", ".join(self.tool_table) or "none"
            return f"error: there is no tool named {call.name!r}; the tools are: {offered}"
        try:
            return tool.call(call.arguments_json)
        except ToolCallError as err:
            self.tool_errors += 1
            return f"error: {err}"

    def call_tools(self, turn: Turn) -> list[Message]:
        """One role "tool" message per call of the turn, in the order the model wrote them."""
        return [tool_result(call, self.answer_call(call)) for call in turn.tool_calls]


def tool_table(tools: Sequence[Any], owner: str) -> dict[str, FunctionTool]:
    table: dict[str, FunctionTool] = {}
    for t in map(as_tool, tools):
        if t.name in table:
            raise TypeError(
                f"{owner}: two tools are named {t.name!r}; give one another name (FunctionTool(fn, name=...))"
            )
        table[t.name] = t
    return table
