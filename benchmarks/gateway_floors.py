"""The gateway in numbers: its Python files, their lines, its longest function and its floors.

    .venv/bin/python -m benchmarks.gateway_floors [--repo DIR] [--modules]   # DIR: any checkout

A floor is a step of the import chain inside the gateway: a module that imports no other
gateway module is on floor 1, any other one floor above the highest module it imports. Every
import counts, a function's own included, and `from meshrl.gateway import actions` counts as
an import of meshrl.gateway.actions (benchmarks.house_layout's reading of imports); an
`__init__.py` is a file like any other. `--modules` prints each module's floor and imports.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from benchmarks.house_layout import imported, python_files

PREFIX = "meshrl.gateway"


def gateway_modules(repo: Path) -> dict[str, Path]:
    return {m: p for m, p in python_files(repo).items() if m == PREFIX or m.startswith(f"{PREFIX}.")}


def floors(modules: dict[str, Path]) -> tuple[dict[str, int], dict[str, set[str]]]:
    """Each module's floor, and the gateway modules each one imports."""
    edges = {m: imported(m, p, modules) for m, p in modules.items()}
    out: dict[str, int] = {}

    def floor_of(module: str, path: tuple[str, ...] = ()) -> int:
        if module in path:
            raise ValueError(f"import cycle inside the gateway: {' -> '.join([*path, module])}")
        if module not in out:
            out[module] = 1 + max((floor_of(m, (*path, module)) for m in edges[module]), default=0)
        return out[module]

    for module in modules:
        floor_of(module)
    return out, edges


def longest_function(modules: dict[str, Path], repo: Path) -> tuple[int, str]:
    """(lines, file:line:name) of the longest def, counted as benchmarks.function_lengths does."""
    rows = [
        (node.end_lineno - node.lineno + 1, f"{path.relative_to(repo)}:{node.lineno}:{node.name}")
        for path in modules.values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    return max(rows)


def report(repo: Path, show_modules: bool) -> None:
    modules = gateway_modules(repo)
    floor, edges = floors(modules)
    lines = sum(len(p.read_text().splitlines()) for p in modules.values())
    length, where = longest_function(modules, repo)
    print(f"gateway: {len(modules)} Python files, {lines} lines, {max(floor.values())} floors of imports")
    print(f"longest function: {length} lines ({where})")
    for module in sorted(modules, key=lambda m: (floor[m], m)) if show_modules else ():
        short = lambda m: m.removeprefix(f"{PREFIX}.")  # noqa: E731
        print(f"  floor {floor[module]}  {short(module)}  imports {', '.join(sorted(map(short, edges[module])))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--modules", action="store_true", help="print each module's floor and imports")
    args = parser.parse_args()
    report(args.repo.resolve(), args.modules)


if __name__ == "__main__":
    main()
