"""One registry mechanism for every kind of pluggable part: a name → object table per kind.

    ALERT_RULES = Registry("alert rule", decorator="register_rule", folder="meshrl.alerts.rules")

    @ALERT_RULES.register("kl_high")
    class KLHigh(Rule): ...

    ALERT_RULES.get("kl_hgh")  # UnknownNameError: ... did you mean 'kl_high'? ...

A name is registered once: a second registration is refused naming both places. An unknown
name is refused with the closest registered one and the full list. `folder`, a package, is
imported module by module on the first lookup, so a new file in it is a new name.

A family with declarations of its own (a policy loss's level, an estimator's critic) writes
its decorator around `add(name, obj, **declared)`: `declared` is what the torch-free config
needs to know about the part, and what `scripts/gen_parts_table.py` writes to the table the
config reads (meshrl/config/parts_table.json). Every registry made is listed in `REGISTRIES`.

Torch-free and import-free: this module sits on the ground floor, below the config.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


class UnknownNameError(KeyError):
    """A name that is not registered. The message lists the registered names."""

    def __str__(self) -> str:  # KeyError would repr() the message and show the quotes
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Entry:
    name: str
    obj: object
    origin: str  # module.qualname of what registered it, to name both sides of a clash
    declared: Mapping[str, object] = field(default_factory=dict)


def origin_of(obj: object) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def did_you_mean(name: str, names: list[str]) -> str:
    """ "; did you mean 'x'?" for the closest of `names`, or "" when none is close."""
    close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


REGISTRIES: dict[str, Registry] = {}  # kind → its registry, every one made
# the modules that make a registry, as names (importing them imports torch and the services)
REGISTRY_MODULES = (
    "meshrl.algos.registry",
    "meshrl.algos.correction.registry",
    "meshrl.algos.loss_masks.registry",
    "meshrl.algos.preference_weighting.registry",
    "meshrl.algos.resampling.registry",
    "meshrl.alerts.registry",
    "meshrl.services.reward.registry",
    "meshrl.services.environment.registry",
    "meshrl.services.rollout.agent.parsers",
)


def all_registries() -> dict[str, Registry]:
    """kind → registry, every registry made (its module imported; its files on first lookup)."""
    for module in REGISTRY_MODULES:
        importlib.import_module(module)
    return REGISTRIES


class Registry:
    """Name → object for one kind of part (e.g. "policy loss")."""

    def __init__(self, kind: str, *, decorator: str = "", folder: str = ""):
        if kind in REGISTRIES:
            raise ValueError(f"a registry of {kind}s already exists ({REGISTRIES[kind].folder or 'no folder'})")
        self.kind, self.decorator, self.folder = kind, decorator or "register", folder
        self._entries: dict[str, Entry] = {}
        self._loaded = not folder
        REGISTRIES[kind] = self

    def register(self, name: str, **declared) -> Callable:
        """Decorator: register the decorated object as `name`."""

        def decorate(obj):
            self.add(name, obj, **declared)
            return obj

        return decorate

    def add(self, name: str, obj: object, *, origin: str = "", **declared) -> object:
        """Register `obj` as `name`; ValueError naming both places when `name` is taken."""
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} needs a non-empty string name, got {name!r}")
        origin = origin or origin_of(obj)
        if name in self._entries:
            raise ValueError(
                f"{self.kind} {name!r} is already registered by {self._entries[name].origin}, "
                f"so {origin} cannot take it; pick another name"
            )
        self._entries[name] = Entry(name, obj, origin, dict(declared))
        return obj

    def entry(self, name: str) -> Entry:
        """The entry of `name`; UnknownNameError with the closest name and the list otherwise."""
        self.load()
        if name not in self._entries:
            raise UnknownNameError(self.unknown(name))
        return self._entries[name]

    def get(self, name: str):
        return self.entry(name).obj

    def unknown(self, name: str) -> str:
        names = self.names()
        return (
            f"unknown {self.kind} {name!r}{did_you_mean(name, names)}; registered: {', '.join(names)}. "
            f"Add one with @{self.decorator}({name!r})."
        )

    def names(self) -> list[str]:
        self.load()
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        """Every entry by name: the listing `meshrl algos` and the parts table are made from."""
        return [self._entries[n] for n in self.names()]

    def items(self) -> list[tuple[str, object]]:
        """(name, object) of every entry by name."""
        return [(e.name, e.obj) for e in self.entries()]

    def load(self) -> None:
        """Import every module of `folder` once: importing a file runs its decorators."""
        if self._loaded:
            return
        self._loaded = True
        package = importlib.import_module(self.folder)
        import_modules(self.folder, package.__path__)

    def remove(self, name: str) -> None:
        """Forget a name (for tests that register throw-away parts)."""
        self._entries.pop(name, None)

    def __contains__(self, name: str) -> bool:
        self.load()
        return name in self._entries


def import_modules(package: str, path) -> None:
    """Import every module of a package (its `__name__`, `__path__`)."""
    for module in pkgutil.iter_modules(path):
        importlib.import_module(f"{package}.{module.name}")
