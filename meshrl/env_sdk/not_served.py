"""The SDK's answer to a Reset under a name the server does not serve, written and read here.

A class alone is served under its class name (`serve(Mul)` serves "Mul"), so a run config
that says `environment.name: mulenv` meets INVALID_ARGUMENT with this text on every Reset.
The text lists the names the server does serve; the contract has no call that lists them, so
the conformance kit, `meshrl doctor` and the launcher read them back from it.

    raise EnvError.invalid(not_served_message("mulenv", ["Mul"]))
    served_names_in(details)    # ("mulenv", ["Mul"]), or None for any other text
"""

from __future__ import annotations

import re
from typing import Iterable

NOT_SERVED = re.compile(r"environment '(?P<asked>[^']*)' is not served here \(this server serves: (?P<served>[^)]*)\)")


def not_served_message(name: str, served: Iterable[str]) -> str:
    return (
        f"environment {name!r} is not served here (this server serves: {', '.join(served)}); "
        f"set the run config's environment.name to one of them"
    )


def served_names_in(details: str) -> tuple[str, list[str]] | None:
    """(the name asked for, the names served) when `details` is the SDK's "not served here"."""
    found = NOT_SERVED.search(details)
    return (found["asked"], [n.strip() for n in found["served"].split(",")]) if found else None
