"""Write the parts table the torch-free config checks names against, from the registries.

    .venv/bin/python scripts/gen_parts_table.py           # rewrite meshrl/config/parts_table.json
    .venv/bin/python scripts/gen_parts_table.py --check   # exit 1, naming the kinds, if it is stale

Every registry (meshrl/registry.py) is loaded, which imports every part file (torch, the
services), and each entry's name and declarations (`Registry.add(name, obj, **declared)`)
are written as JSON, with the KL estimators and loss aggregation modes, which are fixed
lists of meshrl.algos. The config reads only this file (meshrl.config.parts), so a new part
file is a new name once this has run; tests/unit/config/test_parts_table.py fails until then.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLE = REPO / "meshrl" / "config" / "parts_table.json"
ABOUT = "written by scripts/gen_parts_table.py from the registries (meshrl/registry.py); never edit by hand"


def fixed_lists() -> dict[str, dict]:
    """The two fixed lists of meshrl.algos, as kinds without declarations (order kept)."""
    from meshrl.algos.aggregation import AGG_MODES
    from meshrl.algos.kl import KL_ESTIMATORS

    return {
        "KL estimator": {"decorator": "", "names": {name: {} for name in sorted(KL_ESTIMATORS)}},
        "loss aggregation mode": {"decorator": "", "names": {name: {} for name in AGG_MODES}},
    }


def table() -> dict:
    """{"about": ..., "kinds": {kind: {"decorator": ..., "names": {name: declared}}}}."""
    from meshrl.registry import all_registries

    kinds = {
        kind: {"decorator": registry.decorator, "names": {e.name: dict(e.declared) for e in registry.entries()}}
        for kind, registry in sorted(all_registries().items())
    }
    return {"about": ABOUT, "kinds": kinds | fixed_lists()}


def text() -> str:
    """The table as JSON, one line per name (a new part is a one-line diff)."""
    data = table()
    kinds = []
    for kind, family in data["kinds"].items():
        names = ",\n".join(f"    {json.dumps(n)}: {json.dumps(d)}" for n, d in family["names"].items())
        head = f'  {json.dumps(kind)}: {{"decorator": {json.dumps(family["decorator"])}, "names": {{'
        kinds.append(f"{head}\n{names}\n  }}}}")
    return f'{{"about": {json.dumps(data["about"])}, "kinds": {{\n' + ",\n".join(kinds) + "\n}}\n"


def stale_kinds(written: str, fresh: str) -> list[str]:
    """The kinds whose entries differ between two tables' texts."""
    old, new = json.loads(written)["kinds"], json.loads(fresh)["kinds"]
    return sorted(kind for kind in old.keys() | new.keys() if old.get(kind) != new.get(kind))


def main(argv: list[str]) -> int:
    fresh = text()
    if "--check" not in argv:
        TABLE.write_text(fresh, encoding="utf-8")
        return 0
    written = TABLE.read_text(encoding="utf-8") if TABLE.is_file() else '{"kinds": {}}'
    if written == fresh:
        return 0
    print(
        f"{TABLE.relative_to(REPO)} is stale for: {', '.join(stale_kinds(written, fresh)) or 'its layout'}; "
        f"run .venv/bin/python scripts/gen_parts_table.py"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
