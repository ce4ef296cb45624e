"""Lab notes left in product code: the comment and docstring lines that carry an issue number,
a date or a measured figure, which belong in docs/benchmarks.md (with their command) instead.

    .venv/bin/python -m benchmarks.lab_notes [--repo DIR] [--rev COMMIT] [--list]
    # DIR: any checkout (default: this one); COMMIT: count that commit's files, not the work tree

Read: the git-tracked files of meshrl/ (but not the generated meshrl/api/), services/, gateway/,
examples/ and deploy/; for Python its comments and docstrings, for YAML, shell, Dockerfiles and
requirement lists their `#` comments. A line counts once, under the first kind it shows:
- issue: an issue number ("issue 15", "issues 20 and 21", "#123");
- date: an ISO date (2026-12-03);
- figure: a number with a unit of time, rate, memory or ratio ("2.7x") next to a word of
  measuring ("measured", "faster", "slower", "on this host", "SmolLM2", ...) in the same comment
  or docstring, or a timing or speed-up on its own ("13.9 s a step", "74.5 tok/s", "~30x
  slower"). A pointer to docs/benchmarks.md or benchmarks/ is not a word of measuring.
The figure rule is a heuristic (a default such as "a 30 s timeout" is no lab note): --list
prints every line it counts, so a reader judges each. Issue numbers and dates are also held at
zero by tests/unit/test_house_notes.py.
"""

from __future__ import annotations

import argparse
import ast
import collections
import io
import re
import subprocess
import tokenize
from pathlib import Path

FOLDERS = ("meshrl", "services", "gateway", "examples", "deploy")
SKIPPED = ("meshrl/api/",)
HASH_COMMENTED = (".yaml", ".yml", ".sh", ".txt", "Dockerfile")

ISSUE = re.compile(r"\bissues? \d+|(?<![\w&/])#\d{2,}\b", re.IGNORECASE)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
NUMBER = r"(?<![\w.])[~≈]?\d[\d,.]*"
UNIT = re.compile(
    NUMBER + r"\s?(?:-\s?\d[\d,.]*\s?)?(?:ms|µs|us|s|min|h|tok/s|tokens/s|it/s|rows/s|MiB|GiB|KiB|"
    r"MB|GB|kB|KB|GB/s|MB/s|%)(?![\w/])|" + NUMBER + r"[x×](?!\w)"
)
TIMING = re.compile(
    NUMBER
    + r"\s?(?:ms|s|min) (?:a|per) (?:step|group|call|token)|"
    + NUMBER
    + r"\s?(?:tok/s|tokens/s|it/s)|"
    + NUMBER
    + r"\s?[x×] (?:faster|slower)|"
    + NUMBER
    + r"\s?(?:ms|s|min) for a"
)
# Words of measuring; a pointer to where figures live (docs/benchmarks.md, benchmarks/x.py) is none.
MEASURING = re.compile(
    r"\bmeasur(?:ed|ing)\b|\bbenchmark(?!s\.md|s/|s\.)|\bfaster\b|\bslower\b|\bspeed-?up\b|"
    r"\bon this (?:host|machine|CPU)\b|\b\d-core\b|\bSmolLM2|\bH[12]00\b|\bmain job\b",
    re.IGNORECASE,
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def tracked(repo: Path, rev: str | None = None) -> list[str]:
    """The files read: the work tree's tracked ones, or those of commit `rev`."""
    listing = git(repo, "ls-tree", "-r", "--name-only", rev, "--", *FOLDERS) if rev else git(repo, "ls-files", *FOLDERS)
    return [p for p in listing.split() if not p.startswith(SKIPPED)]


def read(repo: Path, path: str, rev: str | None = None) -> str:
    return git(repo, "show", f"{rev}:{path}") if rev else (repo / path).read_text(errors="replace")


def python_notes(text: str) -> list[tuple[int, list[str]]]:
    """(first line, lines) of every comment block and docstring of a Python source."""
    blocks: list[tuple[int, list[str]]] = []
    last = -2
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.COMMENT:
            continue
        row = tok.start[0]
        if row == last + 1 and blocks:
            blocks[-1][1].append(tok.string)
        else:
            blocks.append((row, [tok.string]))
        last = row
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                blocks.append((value.lineno, text.splitlines()[value.lineno - 1 : value.end_lineno]))
    return blocks


def hash_notes(text: str) -> list[tuple[int, list[str]]]:
    """(first line, lines) of every run of `#` comments (whole-line or trailing)."""
    blocks: list[tuple[int, list[str]]] = []
    last = -2
    for row, line in enumerate(text.splitlines(), 1):
        at = line.find("#")
        if at < 0 or line.startswith("#!"):
            continue
        if row == last + 1 and blocks:
            blocks[-1][1].append(line[at:])
        else:
            blocks.append((row, [line[at:]]))
        last = row
    return blocks


def kind_of(line: str, block_measures: bool) -> str | None:
    if ISSUE.search(line):
        return "issue"
    if DATE.search(line):
        return "date"
    if TIMING.search(line) or (block_measures and UNIT.search(line)):
        return "figure"
    return None


def lab_notes(repo: Path, rev: str | None = None) -> list[tuple[str, int, str, str]]:
    """(path, line, kind, text) of every counted line."""
    found = []
    for path in tracked(repo, rev):
        text = read(repo, path, rev)
        if path.endswith(".py"):
            blocks = python_notes(text)
        elif path.endswith(HASH_COMMENTED):
            blocks = hash_notes(text)
        else:
            continue
        seen = set()
        for first, lines in blocks:
            measures = any(MEASURING.search(line) for line in lines)
            for offset, line in enumerate(lines):
                kind = kind_of(line, measures)
                if kind and (first + offset) not in seen:
                    seen.add(first + offset)
                    found.append((path, first + offset, kind, line.strip()))
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--rev", help="count at this commit instead of the work tree (a before figure)")
    parser.add_argument("--list", action="store_true", help="print every counted line")
    args = parser.parse_args()
    found = lab_notes(args.repo, args.rev)
    if args.list:
        for path, line, kind, text in found:
            print(f"{path}:{line}: [{kind}] {text}")
    counts = collections.Counter(kind for _, _, kind, _ in found)
    files = len({path for path, *_ in found})
    print(f"lab-note lines: {len(found)} in {files} files ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")


if __name__ == "__main__":
    main()
