"""Tools from plain Python functions: a JSON Schema from the signature, calls validated.

    def calculator(expression: str) -> str:
        \"\"\"Evaluate an arithmetic expression such as (3+4)*2.

        Args:
            expression: the expression, with + - * / // % ** and parentheses.
        \"\"\"

    FunctionTool(calculator).spec()   # env_pb2.Tool(name="calculator", description=..., parameters_json=...)
    FunctionTool(calculator).call('{"expression": "2+2"}')  # "4"

The schema comes from pydantic (`create_model` over the signature's annotations and
defaults; descriptions from a Google-style "Args:" section). A call whose arguments are not
a JSON object, miss a required argument, name an unknown one or have the wrong type raises
`ToolCallError` with a message the model can read and correct; an exception inside the
function is reported the same way. Either becomes an error observation, never a crash.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any, Callable

import pydantic

from meshrl.api.env.v1 import env_pb2

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ARG_LINE = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$")


class ToolCallError(Exception):
    """A call the tool cannot answer; the message is what the model reads."""


def _doc_parts(fn: Callable) -> tuple[str, dict[str, str]]:
    """(description, {argument: description}) from a docstring with an optional Args: section."""
    doc = inspect.getdoc(fn) or ""
    head, _, rest = doc.partition("\nArgs:")
    described, current = {}, None
    for line in rest.splitlines():
        match = ARG_LINE.match(line)
        if match and line.startswith((" " * 4, "\t")) and not line.startswith(" " * 8):
            current = match.group(1)
            described[current] = match.group(2).strip()
        elif current and line.strip():
            described[current] += " " + line.strip()
    return " ".join(head.split()), described


def _strip_titles(schema: Any) -> Any:
    """pydantic's "title" keys cost the model prompt tokens and say nothing the names do not."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _arguments_model(fn: Callable, name: str, described: dict[str, str]) -> type[pydantic.BaseModel]:
    fields = {}
    for arg, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(
                f"tool {name!r}: *{arg} / **{arg} cannot be described by a JSON Schema; name every argument"
            )
        annotation = Any if p.annotation is p.empty else p.annotation
        default = ... if p.default is p.empty else p.default
        fields[arg] = (annotation, pydantic.Field(default, description=described.get(arg)))
    return pydantic.create_model(name, __config__=pydantic.ConfigDict(extra="forbid"), **fields)


def _validation_message(err: pydantic.ValidationError) -> str:
    parts = []
    for e in err.errors(include_url=False):
        where = ".".join(str(x) for x in e["loc"]) or "arguments"
        parts.append(
            f"argument {where!r}: unknown argument"
            if e["type"] == "extra_forbidden"
            else f"argument {where!r}: {e['msg']}"
        )
    return "; ".join(parts)


def result_text(value: Any) -> str:
    """What the tool returned as the observation text (JSON for anything not a str)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


class FunctionTool:
    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None):
        self.fn = fn
        self.name = name or fn.__name__
        if not NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r}: use 1-64 letters, digits, '_' or '-'")
        doc, described = _doc_parts(fn)
        self.description = description if description is not None else doc
        self.arguments = _arguments_model(fn, self.name, described)
        self.parameters = _strip_titles(self.arguments.model_json_schema())
        self.is_async = inspect.iscoroutinefunction(fn)

    def spec(self) -> env_pb2.Tool:
        return env_pb2.Tool(
            name=self.name,
            description=self.description,
            parameters_json=json.dumps(self.parameters, separators=(",", ":")),
        )

    def parse(self, arguments_json: str) -> dict[str, Any]:
        """The validated keyword arguments; ToolCallError naming what is wrong."""
        try:
            raw = json.loads(arguments_json or "{}")
        except ValueError as err:
            raise ToolCallError(
                f"the arguments of {self.name} are not valid JSON ({err}); write them as one JSON object"
            ) from None
        if not isinstance(raw, dict):
            raise ToolCallError(f"the arguments of {self.name} must be a JSON object, got {type(raw).__name__}")
        try:
            model = self.arguments.model_validate(raw)
        except pydantic.ValidationError as err:
            raise ToolCallError(f"{self.name}: {_validation_message(err)}") from None
        return {k: getattr(model, k) for k in type(model).model_fields}

    def call(self, arguments_json: str) -> str:
        kwargs = self.parse(arguments_json)
        try:
            return result_text(self.fn(**kwargs))
        except ToolCallError:
            raise
        except Exception as err:  # noqa: BLE001 - the tool's failure is the model's observation
            raise ToolCallError(f"{self.name} failed: {type(err).__name__}: {err}") from None

    async def acall(self, arguments_json: str) -> str:
        if not self.is_async:
            return self.call(arguments_json)
        kwargs = self.parse(arguments_json)
        try:
            return result_text(await self.fn(**kwargs))
        except ToolCallError:
            raise
        except Exception as err:  # noqa: BLE001
            raise ToolCallError(f"{self.name} failed: {type(err).__name__}: {err}") from None

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def tool(fn: Callable | None = None, *, name: str | None = None, description: str | None = None):
    """Decorator: `@tool` or `@tool(name="calc")` makes a FunctionTool (still callable)."""
    if fn is None:
        return lambda f: FunctionTool(f, name=name, description=description)
    return FunctionTool(fn, name=name, description=description)


def as_tool(value: FunctionTool | Callable) -> FunctionTool:
    return value if isinstance(value, FunctionTool) else FunctionTool(value)
