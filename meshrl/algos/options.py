"""Per-part options from the config (`algorithm.loss_options`), checked against signatures.

A part's options are its keyword parameters with defaults (what `meshrl algos` lists). A key
that none of the chosen parts takes would be silently ignored, so it is refused here with
the options the parts do take.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping

from meshrl.config.parts import DEDICATED_OPTION_KEYS, INPUTS  # inputs the loop fills in; never options

# options with a config key of their own: loss_options must not set them a second way
DEDICATED = DEDICATED_OPTION_KEYS


def part_options(fn: Callable) -> dict[str, object]:
    """Keyword parameters with defaults of the undecorated `fn`, inputs left out."""
    inner = inspect.unwrap(fn)
    return {
        p.name: p.default
        for p in inspect.signature(inner).parameters.values()
        if p.default is not inspect.Parameter.empty and p.name not in INPUTS
    }


def declared_options(fn: Callable) -> list[str]:
    """The options a part declares to the config: `part_options` less those with a key of their own."""
    return [name for name in part_options(fn) if name not in DEDICATED]


def check_options(key: str, options: Mapping[str, object], parts: Iterable[Callable]) -> None:
    """ValueError naming every key of `options` that no part in `parts` takes."""
    parts = list(parts)
    for name in options:
        if DEDICATED.get(name):
            raise ValueError(f"{key} sets {name!r}, which has its own key: set {DEDICATED[name]}")
    known = {name for fn in parts for name in part_options(fn)}
    unknown = sorted(set(options) - known)
    if unknown:
        names = ", ".join(getattr(fn, "registered_name", fn.__name__) for fn in parts)
        raise ValueError(
            f"{key} has {', '.join(map(repr, unknown))}, which {names} does not take; "
            f"its options: {', '.join(sorted(known)) or 'none'} "
            f"(`meshrl algos` lists every part's options)"
        )
