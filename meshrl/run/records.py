"""A run's JSON lines files (metrics.jsonl, alerts.jsonl, audit.jsonl, samples.jsonl) read
whole or followed as they grow.

    async for index, row in follow_rows(path, from_index=0, follow=True, alive=lambda: ...):
        ...   # every row so far, then each new one; ends when `alive()` turns false

A line not yet ended by a newline is not read until it is (a writer mid-line). When the
file gets shorter (a resumed learner rewrites metrics.jsonl from its checkpoint's step),
reading starts again at its first line and the indices count from 0 again. Undecodable
lines are skipped but keep their index.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import AsyncIterator, Callable

POLL_S = 0.5


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


class LineTail:
    """Complete lines added to `path` since the last call."""

    def __init__(self, path: Path):
        self.path, self.offset, self.index = path, 0, 0

    def new_lines(self) -> list[tuple[int, str]]:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        if size < self.offset:  # rewritten shorter: start over
            self.offset = self.index = 0
        if size == self.offset:
            return []
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read(size - self.offset)
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for raw in data[:end].splitlines():
            out.append((self.index, raw.decode(errors="replace")))
            self.index += 1
        return out


async def follow_rows(
    path: Path,
    *,
    from_index: int = 0,
    follow: bool = False,
    alive: Callable[[], bool] = lambda: True,
    poll_s: float = POLL_S,
) -> AsyncIterator[tuple[int, dict]]:
    tail = LineTail(path)
    while True:
        for index, line in tail.new_lines():
            if index < from_index:
                continue
            try:
                yield index, json.loads(line)
            except ValueError:
                continue
        if not follow:
            return
        if not alive():
            # One last read: rows written just before the run ended.
            for index, line in tail.new_lines():
                if index >= from_index:
                    try:
                        yield index, json.loads(line)
                    except ValueError:
                        pass
            return
        await asyncio.sleep(poll_s)
