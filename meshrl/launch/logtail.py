"""Read the last lines of a log file without loading all of it (for crash reports)."""
from __future__ import annotations

import os
from pathlib import Path

TAIL_BYTES = 64 * 1024


def tail_lines(path: str | Path, lines: int = 30) -> str:
    """The last `lines` lines of `path` ("" if it does not exist), decoded leniently."""
    path = Path(path)
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - TAIL_BYTES))
        data = f.read()
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])
