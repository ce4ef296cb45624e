"""Function lengths in product code: how many functions run over 30 and 45 lines, and the longest.

    .venv/bin/python -m benchmarks.function_lengths [--top N] [--repo DIR]

Counted: every `def` and `async def` in the Python files of meshrl/, services/ and gateway/,
nested functions and methods included, the generated protobuf stubs (meshrl/api/*_pb2*)
left out. A function's length is `end_lineno - lineno + 1` from `ast`: decorators are not
counted, the docstring is. CONTRIBUTING asks for 10-30 lines; this shows how far the code is.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import NamedTuple

ROOTS = ("meshrl", "services", "gateway")
SOFT_LIMIT = 30
HARD_LIMIT = 45


class FunctionLength(NamedTuple):
    lines: int
    where: str  # file:line:name


def function_lengths(source: str, filename: str = "<source>") -> list[FunctionLength]:
    """Every function of one module with its length, in the order `ast.walk` meets them."""
    rows = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            rows.append(FunctionLength(lines, f"{filename}:{node.lineno}:{node.name}"))
    return rows


def product_files(repo: Path) -> list[Path]:
    """The product code's Python files, without the generated protobuf stubs."""
    files = []
    for root in ROOTS:
        files += [path for path in sorted((repo / root).rglob("*.py")) if "_pb2" not in path.name]
    return files


def repo_lengths(repo: Path) -> list[FunctionLength]:
    """Every product function, longest first."""
    rows = []
    for path in product_files(repo):
        rows += function_lengths(path.read_text(), str(path.relative_to(repo)))
    return sorted(rows, key=lambda row: (-row.lines, row.where))


def report(rows: list[FunctionLength], top: int) -> str:
    over_soft = sum(row.lines > SOFT_LIMIT for row in rows)
    over_hard = sum(row.lines > HARD_LIMIT for row in rows)
    lines = [f"functions: {len(rows)}  over {SOFT_LIMIT}: {over_soft}  over {HARD_LIMIT}: {over_hard}"]
    lines += [f"{row.lines:4d}  {row.where}" for row in rows[:top]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=20, help="how many of the longest to list")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    print(report(repo_lengths(args.repo), args.top))


if __name__ == "__main__":
    main()
