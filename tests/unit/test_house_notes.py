"""Product code carries no lab notes: no issue number and no date in its code, comments,
docstrings or configs.

A comment says why the code is as it is; when it was decided and under which issue is the
commit's to say, and what was measured (with the command) is docs/benchmarks.md's. Read:
the Python of meshrl/ (but not the generated meshrl/api/), services/ and gateway/, and the
Python, YAML, shell and requirement files of examples/ and deploy/. Measured figures in prose
are left to review (`python -m benchmarks.lab_notes --list` lists the likely ones).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON_ROOTS = ("meshrl", "services", "gateway")
CONFIG_ROOTS = ("examples", "deploy")
CONFIG_SUFFIXES = {".py", ".yaml", ".yml", ".sh", ".txt"}
SKIPPED_PARTS = {"node_modules", "__pycache__"}
GENERATED = ROOT / "meshrl" / "api"

# "issue 15", "issues 20 and 21", "Issue 12.6"; "#123" unless it follows a word or a slash
# (an upstream reference such as linkedin/Liger-Kernel#1298 names another project's issue).
ISSUE = re.compile(r"\bissues? \d+", re.IGNORECASE)
HASH_ISSUE = re.compile(r"(?<![\w&/#])#\d{2,}\b")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
FIX = (
    "product code carries no lab notes. Keep the reason in the comment and move the rest out: "
    "a measured figure, with its command, to docs/benchmarks.md (point to its section by name), "
    "an issue number or a date to the commit message"
)


def walk(root: Path):
    """Every file under `root`, never entering node_modules, caches or the generated stubs."""
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if d not in SKIPPED_PARTS and Path(folder, d) != GENERATED]
        yield from (Path(folder, name) for name in names)


def product_files() -> list[Path]:
    files = [p for root in PYTHON_ROOTS for p in walk(ROOT / root) if p.suffix == ".py"]
    files += [
        p for root in CONFIG_ROOTS for p in walk(ROOT / root) if p.suffix in CONFIG_SUFFIXES or p.name == "Dockerfile"
    ]
    return sorted(files)


def notes_in(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, the line) of each issue number or date in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in (("issue number", ISSUE), ("issue number", HASH_ISSUE), ("date", DATE)):
            if pattern.search(line):
                found.append((number, what, line.strip()))
                break
    return found


@pytest.mark.parametrize(
    "line",
    [
        "# shared (issue 15: raw vLLM on one core)",
        '"""The status of a run (issue 34.6)."""',
        "# Issues 20 and 21 asked for it",
        "# fixed in #123",
        "row (one run, 2026-12-04, seed 8)",
    ],
)
def test_a_lab_note_is_found(line):
    assert notes_in(line), line


@pytest.mark.parametrize(
    "line",
    [
        "is wrong for per-token losses (linkedin/Liger-Kernel#1298), so they are refused",
        "# the issue's fix: an issue is raised when the key is unknown",
        'stamp = time.strftime("%Y-%m-%d")',
        "color: '#ff0000'  # and #1 of the list",
        "version: 20261203  # a plain number",
    ],
)
def test_what_is_no_lab_note(line):
    assert not notes_in(line), line


def test_the_scan_reads_product_code():
    files = {p.relative_to(ROOT).as_posix() for p in product_files()}
    assert "meshrl/launch/cores.py" in files
    assert "examples/grpo_smollm2.yaml" in files
    assert not any(f.startswith("meshrl/api/") for f in files)
    assert not any("node_modules" in f for f in files)


def test_product_code_has_no_issue_numbers_or_dates():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {what}: {line}"
        for path in product_files()
        for number, what, line in notes_in(path.read_text(errors="replace"))
    ]
    assert not found, FIX + ":\n" + "\n".join(found)
