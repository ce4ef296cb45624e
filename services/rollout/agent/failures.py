"""Why an episode cannot be trained: the environment failed it, or answered nonsense.

`EpisodeFailed` carries the episode id, a status (the gRPC status code's name, or
`INVALID_ANSWER` when the environment answered something the contract does not allow) and
the message; `drop_reason` is what `Group.drop_reason` then says: a code the learner counts
by (`env_` + the status, lower case: the part before the first ":"), then the episode, the
status and the message, e.g.
    env_deadline_exceeded: episode g-17/3: environment DEADLINE_EXCEEDED: Step (turn 1) at
    env:50090 got no answer within 10 s (environment.timeout_s)
An episode whose first prompt leaves no room for a turn fails the same way, from the rollout:
    prompt_too_long: episode g-17/3: rollout CONTEXT_OVERFLOW: the first prompt ... is 827 tokens ...
"""

from __future__ import annotations

INVALID_ANSWER = "INVALID_ANSWER"  # a well-formed message the contract forbids (env.proto)


class EpisodeFailed(Exception):
    def __init__(self, episode_id: str, status: str, message: str, *, code: str = "", source: str = "environment"):
        super().__init__(f"episode {episode_id}: {source} {status}: {message}")
        self.episode_id, self.status, self.message = episode_id, status, message
        self.code = code or f"env_{status.lower()}"

    @property
    def drop_reason(self) -> str:
        return f"{self.code}: {self}"


class InvalidAnswer(ValueError):
    """An environment's answer breaks the contract; raised where it is read, turned into
    `EpisodeFailed(..., INVALID_ANSWER, message)` by the episode."""
