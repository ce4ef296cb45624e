"""Built-in environments by name, registered by decorator; each factory gets the service's
`Builtins` context (sandbox settings) and returns an Environment subclass.

    @register_builtin("calculator")
    def calculator_env(ctx: Builtins) -> type[Environment]: ...

`environments(["tool_arith", "calc=calculator"], ctx)` gives {served name: class}: a name
may be served under an alias (the run config's environment.name) with `alias=builtin`. The
files of builtins/ are imported on the first lookup, so a new file there is a new built-in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Sequence

from meshrl.env_sdk import Environment
from meshrl.registry import Registry, UnknownNameError
from meshrl.services.environment.sandbox import Sandbox, SandboxLimits, SandboxUnavailable, detect

Factory = Callable[["Builtins"], type[Environment]]
BUILTINS = Registry("built-in environment", decorator="register_builtin", folder="meshrl.services.environment.builtins")


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
    """Decorator: register `factory` as the built-in environment `name`."""
    return BUILTINS.register(name)


def environments(names: Sequence[str], ctx: Builtins) -> dict[str, type[Environment]]:
    """{served name: class} for `names` ("builtin" or "alias=builtin"); ValueError for an unknown one."""
    served = {}
    for entry in names:
        alias, sep, builtin = entry.partition("=")
        builtin = builtin if sep else alias
        try:
            cls = BUILTINS.get(builtin)(ctx)
        except UnknownNameError as err:
            raise ValueError(str(err)) from None
        served[alias] = type(cls.__name__, (cls,), {"name": alias}) if alias != cls.name else cls
    return served
