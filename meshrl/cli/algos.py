"""`meshrl algos [FAMILY]`: list every registered algorithm part, its options and its paper.

    meshrl algos                 # everything: estimators, losses, KL, aggregation, DPO
    meshrl algos policy          # one family (a prefix of its name is enough)

torch is imported only when the command runs (the parts are torch code), never at
`meshrl --help` time.
"""

from __future__ import annotations
from meshrl.cli import about


def add_parser(sub) -> None:
    p = sub.add_parser("algos", help=about("algos"))
    p.add_argument(
        "family", nargs="?", default="", help="only this family, e.g. 'advantage', 'policy', 'kl', 'aggregation'"
    )
    p.set_defaults(func=run)


def format_part(part) -> list[str]:
    """Two to three indented lines for one part."""
    head = f"  {part.name}" + (f"  ({part.notes})" if part.notes else "")
    lines = [head]
    if part.options:
        lines.append("      options: " + ", ".join(f"{k}={v!r}" for k, v in part.options.items()))
    if part.paper:
        lines.append(f"      paper: {part.paper}")
    return lines


def run(args) -> int:
    from meshrl.algos.catalog import (
        registered_parts,
    )  # lazy: torch, for the listing only (`meshrl algos --help` stays quick)

    wanted = args.family.lower()
    family = None
    for part in registered_parts():
        if wanted and not part.family.lower().startswith(wanted):
            continue
        if part.family != family:
            family = part.family
            print(f"{family}:")
        print("\n".join(format_part(part)))
    if family is None:
        print(f"no family starts with {args.family!r}; try advantage, policy, kl, loss, preference")
        return 2
    return 0
