"""docs/guide/layout.md names every folder a newcomer meets: each package folder of meshrl/
(not the generated stubs under meshrl/api/), each folder of services/ and gateway/, and each
test tier with its second level (tests/unit/algos, tests/services/rollout, ...).

The page is a tree: a top-level entry starts its line (`meshrl/`), the folders under it are
written relative to it (`inputs/data/`), and `a/{b,c}/` names `a/b/` and `a/c/` at once.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = ROOT / "docs" / "guide" / "layout.md"
# top-level folder → how deep its folders must be named (None: all of them)
DEPTHS = {"meshrl": None, "services": None, "gateway": None, "tests": 2}
NOT_FOLDERS = {"__pycache__", "node_modules"}
BRACES = re.compile(r"\{([^{}]*)\}")


def has_files(folder: Path) -> bool:
    """A folder counts when some file lies under it outside caches (a moved package leaves
    an empty folder or a stale __pycache__ behind, and git keeps neither)."""
    for _here, subfolders, names in os.walk(folder):
        subfolders[:] = [d for d in subfolders if d not in NOT_FOLDERS]
        if names:
            return True
    return False


def skipped(name: str) -> bool:
    return name in NOT_FOLDERS or name.startswith(".") or name.endswith(".egg-info")


def folders(top: str, depth: int | None) -> list[str]:
    """Folders under `top`, relative to it, to the given depth (meshrl/api's children excepted)."""
    found = []
    for here, subfolders, _ in os.walk(ROOT / top):
        subfolders[:] = sorted(d for d in subfolders if not skipped(d))
        rel = Path(here).relative_to(ROOT / top)
        if rel.parts and has_files(Path(here)):
            found.append(rel.as_posix())
        if (depth and len(rel.parts) >= depth) or (top == "meshrl" and rel.parts[:1] == ("api",)):
            subfolders[:] = []
    return found


def expand(text: str) -> str:
    """`unit/{a,b}/` → `unit/a/ unit/b/`, innermost braces first."""
    while match := BRACES.search(text):
        start = text.rfind(" ", 0, match.start()) + 1
        end = text.find(" ", match.end())
        end = len(text) if end < 0 else end
        word = text[start:end]
        head, tail = word[: match.start() - start], word[match.end() - start :]
        names = [n.strip() for n in match.group(1).split(",")]
        text = text[:start] + " ".join(head + n + tail for n in names) + text[end:]
    return text


def sections(text: str) -> dict[str, str]:
    """Top-level entry (`meshrl`) → the tree's lines under it, expanded."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            current = line.split("/", 1)[0] if "/" in line.split(" ", 1)[0] else None
            out.setdefault(current, []) if current else None
        elif current:
            out[current].append(line)
    return {top: expand("\n".join(lines)) for top, lines in out.items()}


def named(section: str, rel: str) -> bool:
    return re.search(rf"(?<![\w/]){re.escape(rel)}/", section) is not None


def missing(text: str) -> list[str]:
    tree = sections(text)
    out = []
    for top, depth in DEPTHS.items():
        if top not in tree:
            out.append(f"{top}/")
            continue
        out += [f"{top}/{rel}" for rel in folders(top, depth) if not named(tree[top], rel)]
    return out


def test_braces_name_several_folders():
    assert expand("  unit/{alerts,algos}/  pure") == "  unit/alerts/ unit/algos/  pure"
    assert expand("adapters/{openenv,textarena}/") == "adapters/openenv/ adapters/textarena/"


def test_a_folder_is_named_under_its_own_top_level_entry():
    text = "```\nmeshrl/   core\n  api/<area>/v1/   stubs\ngateway/   the run API\n  static/   dashboard\n```"
    tree = sections(text)
    assert named(tree["meshrl"], "api") and not named(tree["meshrl"], "static")
    assert named(tree["gateway"], "static") and not named(tree["gateway"], "api")
    assert not named(tree["meshrl"], "v1")  # a path's tail is not the folder


def test_the_folders_looked_for_include_the_ones_this_page_was_missing():
    assert {"env_sdk", "plan", "security", "algos/correction"} <= set(folders("meshrl", None))
    assert "environment/sandbox" in folders("services", None)
    assert {"unit/algos", "services/rollout", "chaos"} <= set(folders("tests", 2))
    assert not any(f.startswith("api/") for f in folders("meshrl", None))
    assert not any(f.count("/") > 1 for f in folders("tests", 2))


def test_layout_names_every_folder():
    gaps = missing(LAYOUT.read_text())
    assert not gaps, (
        "docs/guide/layout.md does not name these folders; add a line for each under its "
        "top-level entry (relative path, e.g. `inputs/data/` under `meshrl/`) saying what it "
        "holds:\n" + "\n".join(gaps)
    )
