"""Built-in environments by name, registered by decorator; each factory gets the service's
`Builtins` context (sandbox settings) and returns an Environment subclass.

    @register_builtin("calculator")
    def calculator_env(ctx: Builtins) -> type[Environment]: ...

`environments(["tool_arith", "calc=calculator"], ctx)` gives {served name: class}: a name
may be served under an alias (the run config's environment.name) with `alias=builtin`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Sequence

from meshrl.env_sdk import Environment
from meshrl.services.environment.sandbox import Sandbox, SandboxLimits, SandboxUnavailable, detect

Factory = Callable[["Builtins"], type[Environment]]
BUILTINS: dict[str, Factory] = {}


@dataclass
class Builtins:
    """What built-ins may need from the service: the python sandbox, made on first use."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
    isolation_mode: str = "auto"
    hide: Sequence[str] = ()  # paths the sandbox must not see (run dir, secret files)
    python: str | None = None  # the sandbox's interpreter (None: see sandbox.run.default_python)

    @cached_property
    def sandbox(self) -> Sandbox:
        isolation = detect(self.isolation_mode)
        if not isolation.mode:
            raise SandboxUnavailable(f"the python tool cannot be sandboxed here: {isolation.reason}")
        return Sandbox(self.limits, isolation, python=self.python, hide=self.hide)


def register_builtin(name: str) -> Callable[[Factory], Factory]:
    def add(factory: Factory) -> Factory:
        if name in BUILTINS:
            raise ValueError(f"built-in environment {name!r} is registered twice")
        BUILTINS[name] = factory
        return factory

    return add


def environments(names: Sequence[str], ctx: Builtins) -> dict[str, type[Environment]]:
    """{served name: class} for `names` ("builtin" or "alias=builtin"); ValueError for an unknown one."""
    _load()
    served = {}
    for entry in names:
        alias, sep, builtin = entry.partition("=")
        builtin = builtin if sep else alias
        if builtin not in BUILTINS:
            raise ValueError(f"no built-in environment {builtin!r}; the built-ins are: {', '.join(sorted(BUILTINS))}")
        cls = BUILTINS[builtin](ctx)
        served[alias] = type(cls.__name__, (cls,), {"name": alias}) if alias != cls.name else cls
    return served


def _load() -> None:
    """Import the modules that register built-ins (kept out of import time of this module)."""
    from meshrl.services.environment import calculator_env, python_env, tool_arith  # noqa: F401 - registers
