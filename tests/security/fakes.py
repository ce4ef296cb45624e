"""Fakes for the attack tests, named as such: they stand in for a component that is not the
one under attack (vLLM's engine, when the attack is on what reaches it)."""

from __future__ import annotations

from pathlib import Path


class RecordingEngine:
    """Stands in for vLLM's engine in tests of the rollout's weights updater: loads by the
    path it is given, as vLLM's worker does, and records the bytes it read. `before_read`
    runs first: the moment between the rollout's check and the worker's read."""

    def __init__(self, before_read=None):
        self.version, self.loaded, self.before_read = 0, [], before_read

    async def load_weights(self, path, version: int) -> float:
        if self.before_read is not None:
            self.before_read()
        self.loaded.append(Path(path).read_bytes())
        self.version = version
        return 0.0
