"""`meshrl algos [FAMILY]`: list every registered algorithm part, its options and its paper,
then the other registered parts (alert rules, reward rules, built-in environments, tool-call
formats) by name.

    meshrl algos                 # everything: estimators, losses, KL, aggregation, DPO, ...
    meshrl algos policy          # one family (a prefix of its name is enough)

torch is imported only when the command runs (the parts are torch code), never at
`meshrl --help` time.
"""

from __future__ import annotations

from meshrl.cli import about
from meshrl.registry import all_registries


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


def other_parts(part_record) -> list:
    """The registered parts outside meshrl/algos, by kind and name, as `part_record`s."""
    others = [r for kind, r in sorted(all_registries().items()) if not r.folder.startswith("meshrl.algos")]
    return [part_record(f"{r.kind}s (@{r.decorator})", e.name, "", e.origin) for r in others for e in r.entries()]


def run(args) -> int:
    # lazy: torch and the services, for the listing only (`meshrl algos --help` stays quick)
    from meshrl.algos.catalog import Part, registered_parts

    wanted = args.family.lower()
    family = None
    for part in registered_parts() + other_parts(Part):
        if wanted and not part.family.lower().startswith(wanted):
            continue
        if part.family != family:
            family = part.family
            print(f"{family}:")
        print("\n".join(format_part(part)))
    if family is None:
        print(
            f"no family starts with {args.family!r}; try advantage, policy, kl, loss, preference, alert, reward, built-in, tool"
        )
        return 2
    return 0
