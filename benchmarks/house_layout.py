"""The house in numbers: what issue 25 measures before and after a renovation.

    .venv/bin/python -m benchmarks.house_layout [--repo DIR]   # DIR: any checkout (default: this one)

Printed, for the Python code of meshrl/, services/ and gateway/ (imported as meshrl.*):
- top-level folders: the repository's (holding tracked files), and the core package's (meshrl/<x>/);
- import cycles between folders: pairs of folders that import each other (a folder is
  meshrl/<x>, services/<name>, gateway), with the file imports on each side; every import
  counts, a function's own included;
- the biggest folder's share of lines, and files of 40 lines or fewer (every .py file);
- README lines, and `# lazy` import comments.
Imports against the floors and lint findings come from their own tools (import-linter via
scripts/lint_imports.py, ruff), so they are not repeated here.
"""

from __future__ import annotations

import argparse
import ast
import collections
import subprocess
from pathlib import Path

ROOTS = {"meshrl": "meshrl", "services": "meshrl.services", "gateway": "meshrl.gateway"}


def python_files(repo: Path) -> dict[str, Path]:
    """Module name → file, as installed (services/x.py is meshrl.services.x)."""
    out = {}
    for folder, prefix in ROOTS.items():
        for path in sorted((repo / folder).rglob("*.py")):
            parts = list(path.relative_to(repo / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([prefix, *parts])] = path
    return out


def imported(module: str, path: Path, modules: dict) -> set[str]:
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
    found = set()
    for name in names:
        while name and name not in modules and "." in name:
            name = name.rpartition(".")[0]
        if name in modules and name != module:
            found.add(name)
    return found


def folder(module: str) -> str:
    parts = module.split(".")
    depth = 3 if parts[:2] == ["meshrl", "services"] else 2
    return ".".join(parts[:depth])


def folder_cycles(repo: Path) -> list[tuple[str, str, int, int]]:
    modules = python_files(repo)
    edges = collections.Counter()
    for module, path in modules.items():
        for other in imported(module, path, modules):
            a, b = folder(module), folder(other)
            if a != b:
                edges[(a, b)] += 1
    return sorted((a, b, n, edges[(b, a)]) for (a, b), n in edges.items() if a < b and (b, a) in edges)


def line_counts(repo: Path) -> dict[Path, int]:
    return {path: len(path.read_text().splitlines()) for path in python_files(repo).values()}


def report(repo: Path) -> None:
    tracked = subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True, check=True).stdout
    top = sorted({f.split("/")[0] for f in tracked.splitlines() if "/" in f and not f.startswith(".")})
    core = sorted(p.name for p in (repo / "meshrl").iterdir() if (p / "__init__.py").is_file())
    print(f"top-level folders: {len(top)} ({' '.join(top)})")
    print(f"core package folders: {len(core)} ({' '.join(core)})")
    cycles = folder_cycles(repo)
    print(f"import cycles between folders: {len(cycles)}")
    for a, b, n, m in cycles:
        print(f"    {a} -> {b}: {n} file imports, back: {m}")
    lines = line_counts(repo)
    by_folder = collections.Counter()
    for module, path in python_files(repo).items():
        by_folder[folder(module)] += lines[path]
    name, most = by_folder.most_common(1)[0]
    total = sum(lines.values())
    print(f"biggest folder: {name}, {most} of {total} lines ({100 * most / total:.1f} %)")
    small = [p for p, n in lines.items() if n <= 40]
    print(
        f"files of 40 lines or fewer: {len(small)} of {len(lines)} "
        f"({len([p for p in small if p.name != '__init__.py'])} not counting __init__.py)"
    )
    print(f"README lines: {len((repo / 'README.md').read_text().splitlines())}")
    lazy = sum(p.read_text().count("# lazy") for p in lines)
    print(f"'# lazy' import comments: {lazy}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    report(parser.parse_args().repo.resolve())


if __name__ == "__main__":
    main()
