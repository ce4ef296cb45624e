"""Check the house's import contracts (pyproject's [tool.importlinter]: the floors, and that
no service imports another) with import-linter, on the tree as it is installed.

    .venv/bin/python scripts/lint_imports.py        # prints lint-imports' report; exit 1 if broken

import-linter finds a package's modules by walking its folder, but setuptools' package-dir
installs services/ and gateway/ as meshrl.services and meshrl.gateway (setup.py): walking
meshrl/ alone would miss every service. So the .py files are copied into a temporary tree
laid out as installed, and lint-imports runs there (function-level imports count too).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {"meshrl": "meshrl", "services": "meshrl/services", "gateway": "meshrl/gateway"}


def lay_out(repo: Path, dest: Path) -> Path:
    """Copy every .py file of the three roots to dest/meshrl/... as installed; returns dest."""
    for folder, target in FOLDERS.items():
        for src in (repo / folder).rglob("*.py"):
            out = dest / target / src.relative_to(repo / folder)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out)
    return dest


def lint_imports(tree: Path, config: Path = REPO / "pyproject.toml") -> subprocess.CompletedProcess:
    """lint-imports with `config`, finding `meshrl` in `tree` (its folder goes first on sys.path)."""
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--no-cache", str(config)], cwd=tree, capture_output=True, text=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="meshrl-imports-") as tmp:
        result = lint_imports(lay_out(REPO, Path(tmp)))
    print(result.stdout + result.stderr, end="")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
