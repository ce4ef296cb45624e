"""One episode's calls to the policy endpoint, and the table of open episodes by key.

A session opens before the episode's Reset (its key goes in `ResetRequest.policy`) and closes
with the episode. Keys are 32 random bytes (urlsafe), looked up by their SHA-256 so a lookup's
timing says nothing about another episode's key; a closed episode's key answers nothing more.

The session is the episode's trajectory as the calls build it: the first call's rendered
messages and tools are the prompt; each call after it must extend the conversation
(`openai_messages.added_messages`) and what it adds is appended as the chat template's delta
(mask 0), its sampled tokens after it (mask 1). Calls are served one at a time per episode
(a lock): an episode is one sequence. A call that does not extend the conversation is still
answered (rendered afresh) but marks the session `broken`: the episode is then dropped.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from dataclasses import dataclass, field

from meshrl.services.rollout.agent.episode import Trajectory


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass
class PolicySession:
    episode: object  # the Episode (episode.py) the calls belong to
    traj: Trajectory | None = None  # None until the first call
    conversation: list[dict] = field(default_factory=list)  # every message so far, our replies included
    tools: dict = field(default_factory=dict)  # name → ToolSpec, from the first call
    broken: str = ""  # why the calls are not one trajectory ("" while they are)
    calls: int = 0
    ended: str = ""  # a limit that ended it (token_budget | context)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class SessionTable:
    def __init__(self):
        self.by_hash: dict[str, PolicySession] = {}
        self.keys: dict[str, str] = {}  # episode id → key hash

    def open(self, episode) -> str:
        """A fresh key for `episode` (its session starts empty)."""
        key = secrets.token_urlsafe(32)
        self.by_hash[key_hash(key)] = PolicySession(episode)
        self.keys[episode.id] = key_hash(key)
        return key

    def get(self, key: str) -> PolicySession | None:
        return self.by_hash.get(key_hash(key)) if key else None

    def of(self, episode_id: str) -> PolicySession | None:
        return self.by_hash.get(self.keys.get(episode_id, ""))

    def close(self, episode_id: str) -> PolicySession | None:
        return self.by_hash.pop(self.keys.pop(episode_id, ""), None)
