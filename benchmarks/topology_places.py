"""Where the mesh's topology is spelled: the lines of product code (meshrl/, services/, gateway/,
deploy/, Python) that write a pipeline stage as a string, or three or more service kinds on
one line (a list of kinds). One table (meshrl/topology.py) is the goal; every other line found
is a second place to keep in step.

    .venv/bin/python -m benchmarks.topology_places [--repo DIR]   # DIR: any checkout (default: this one)

Not counted: the words in their other senses or in docstring examples (the dead-letter summary,
the bus client's and pull's usage lines, tracing's example, the library child's
{"ready": true}, the status commands' "ready" flag and column, the alerts' "scored" progress).
Simplification: a grep of string literals, so a stage or kind spelled some other way (an
f-string, a YAML file) is not seen; tests/deploy/test_topology.py covers the YAML.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOTS = ("meshrl", "services", "gateway", "deploy")
STAGE = re.compile(r'"(prompts|generated|scored|ready)"')
KIND_LIST = re.compile(r'("(learner|rollout|reward|reference|reward_model|environment)"[^"]*){3}')
OTHER_SENSE = re.compile(
    r"^(meshrl/transport/bus/(dead_summary|client|pull)|meshrl/telemetry/tracing|meshrl/transport/library"
    r"|meshrl/cli/status|meshrl/run/status|meshrl/alerts)"
)
PROGRESS = re.compile(r"^\s+self\._progress\(")


def places(repo: Path) -> list[str]:
    """`path:line` of every line that spells a stage or a list of kinds."""
    found = []
    for root in ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            rel = path.relative_to(repo).as_posix()
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                stage = STAGE.search(line) and not OTHER_SENSE.match(rel) and not PROGRESS.match(line)
                if stage or KIND_LIST.search(line):
                    found.append(f"{rel}:{number}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    found = places(parser.parse_args().repo)
    files = sorted({f.split(":")[0] for f in found})
    print("\n".join(found))
    table = [f for f in found if f.startswith("meshrl/topology.py:")]
    print(f"{len(found)} lines in {len(files)} files ({len(table)} of them the table, meshrl/topology.py)")


if __name__ == "__main__":
    main()
