"""`tags.json` of one checkpoint: names that protect it from pruning ("best", "release").

Kept outside the manifest because tags change after the save; written atomically
(temporary file + rename) so a crash never leaves a half-written list.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import TAGS
from meshrl.inputs.checkpoint.reading import json_text, parse_json

MAX_TAGS_BYTES = 64 << 10  # a list of tag names

TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def read_tags(ckpt: Path) -> list[str]:
    path = Path(ckpt) / TAGS
    if not path.is_file():
        return []
    try:
        tags = parse_json(json_text(path, limit=MAX_TAGS_BYTES))["tags"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(
            f'{path} is not a tags file ({type(err).__name__}); expected {{"tags": ["name", ...]}}; fix or delete it'
        ) from None
    if not isinstance(tags, list) or not all(isinstance(t, str) and TAG_RE.match(t) for t in tags):
        raise CheckpointError(f'{path} is not a tags file: expected {{"tags": ["name", ...]}}; fix or delete it')
    return tags


def check_tag(name: str) -> str:
    """`name` if it may be a tag; CheckpointError saying the rule otherwise (checked where a
    tag arrives, as the learner's Checkpoint call, so a bad one never reaches a save)."""
    if not TAG_RE.match(name):
        raise CheckpointError(
            f"tag {name[:80]!r} is not allowed: use 1-64 letters, digits, "
            f"'.', '_' or '-', starting with a letter or digit"
        )
    return name


def write_tags(ckpt: Path, tags: list[str]) -> None:
    for name in tags:
        check_tag(name)
    path = Path(ckpt) / TAGS
    tmp = path.with_name(f"{TAGS}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps({"tags": sorted(set(tags))}) + "\n")
    os.rename(tmp, path)
