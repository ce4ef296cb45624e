"""The open episodes of one server: idempotent Reset/Step, an open-episode cap, idle expiry.

- Reset of an id that is open (or still opening) returns that episode's first answer.
- Step (id, turn): a turn already started returns its answer (awaiting it if it still
  runs, so a retry after a deadline gets the first attempt's answer instead of advancing
  the episode twice); turn `next` starts it; anything else is refused with the status the
  contract names: NOT_FOUND (no such episode), FAILED_PRECONDITION (the episode is done or
  its previous turn failed or is still running), INVALID_ARGUMENT (a turn out of order).
- Work runs in tasks the servicer awaits with the call's deadline; a deadline does not cancel
  the work (a sync method in a thread cannot be stopped), its answer is kept for the retry.
- At most `max_episodes` open or opening: the next new id gets RESOURCE_EXHAUSTED (meshrl
  tries another replica). Episodes idle for `idle_s` are closed (a caller that died).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk.answers import reset_response, step_response
from meshrl.env_sdk.environment import Environment
from meshrl.env_sdk.errors import EnvError, internal
from meshrl.env_sdk.not_served import not_served_message
from meshrl.env_sdk.task import task_from_proto, turn_from_proto

log = logging.getLogger(__name__)
KEEP_TURNS = 4  # answers kept per episode for retries (a retry is of the latest turn)


async def invoke(pool: Executor, method: Callable, *args) -> Any:
    """Await an `async def` method; run a plain one in the pool."""
    if inspect.iscoroutinefunction(method):
        return await method(*args)
    return await asyncio.get_running_loop().run_in_executor(pool, method, *args)


async def guarded(what: str, method: Callable, pool: Executor, *args) -> Any:
    """The environment's method; its own exceptions become INTERNAL naming `what`."""
    try:
        return await invoke(pool, method, *args)
    except EnvError:
        raise
    except Exception as err:  # noqa: BLE001 - an environment's bug is INTERNAL, never a crash
        log.warning("%s failed", what, exc_info=True)
        raise internal(err, what) from None


def _quiet(task: asyncio.Task) -> None:
    """Mark a failure seen: a task whose caller left (deadline) must not log 'never retrieved'."""
    if not task.cancelled():
        task.exception()


def background(coro) -> asyncio.Task:
    task = asyncio.ensure_future(coro)
    task.add_done_callback(_quiet)
    return task


@dataclass
class Episode:
    env: Environment
    first: env_pb2.ResetResponse
    turns: dict[int, asyncio.Task] = field(default_factory=dict)
    next_turn: int = 0
    done_turn: int | None = None
    last_used: float = field(default_factory=time.monotonic)


class Episodes:
    def __init__(
        self,
        environments: Mapping[str, type[Environment]],
        pool: Executor,
        *,
        max_episodes: int = 256,
        idle_s: float = 900.0,
    ):
        if not environments:
            raise ValueError("serve at least one Environment subclass")
        self.environments = dict(environments)
        self.default = next(iter(self.environments))
        self.pool = pool
        self.max_episodes = max_episodes
        self.idle_s = idle_s
        self.open: dict[str, Episode] = {}
        self.opening: dict[str, asyncio.Task] = {}

    def factory(self, name: str) -> type[Environment]:
        if name in self.environments:
            return self.environments[name]
        if not name:
            return self.environments[self.default]
        raise EnvError.invalid(not_served_message(name, self.environments))

    def reset(self, request: env_pb2.ResetRequest) -> asyncio.Future:
        episode_id = request.episode_id
        if episode_id in self.open:
            self.open[episode_id].last_used = time.monotonic()
            return _done(self.open[episode_id].first)
        if episode_id in self.opening:
            return self.opening[episode_id]
        self.close_idle()
        if len(self.open) + len(self.opening) >= self.max_episodes:
            raise EnvError.full(
                f"this replica holds {len(self.open) + len(self.opening)} open episodes "
                f"(max_episodes={self.max_episodes}): close finished episodes, add replicas, "
                f"or raise max_episodes"
            )
        factory = self.factory(request.environment)
        task = background(self._open(request, factory))
        self.opening[episode_id] = task
        return task

    async def _open(self, request: env_pb2.ResetRequest, factory: type[Environment]) -> env_pb2.ResetResponse:
        try:
            return await self._opened(request, factory)
        finally:  # here, not in a done callback: never counted both opening and open
            self.opening.pop(request.episode_id, None)

    async def _opened(self, request: env_pb2.ResetRequest, factory: type[Environment]) -> env_pb2.ResetResponse:
        task = task_from_proto(request)
        env = factory()
        env.task = task
        what = f"{factory.__name__}.reset (episode {task.episode_id!r})"
        value = await guarded(what, env.reset, self.pool, task)
        try:
            first = reset_response(value, env)
        except ValueError as err:
            raise internal(err, what) from None
        self.open[task.episode_id] = Episode(env, first)
        return first

    def episode(self, episode_id: str) -> Episode:
        ep = self.open.get(episode_id)
        if ep is None:
            raise EnvError.not_found(
                f"episode {episode_id!r} is not open on this server: never reset, "
                f"closed, idle for more than {self.idle_s:g} s, or lost in a restart; "
                f"Reset it again (meshrl drops the episode)"
            )
        ep.last_used = time.monotonic()
        return ep

    def step(self, request: env_pb2.StepRequest) -> asyncio.Future:
        ep, t = self.episode(request.episode_id), request.turn
        if t in ep.turns:
            return ep.turns[t]
        self._check_next(ep, request)
        task = background(self._step(ep, request))
        ep.turns[t] = task
        ep.next_turn = t + 1
        for old in [k for k in ep.turns if k <= t - KEEP_TURNS]:
            del ep.turns[old]
        return task

    def _check_next(self, ep: Episode, request: env_pb2.StepRequest) -> None:
        name, t = request.episode_id, request.turn
        if ep.done_turn is not None:
            raise EnvError.finished(
                f"episode {name!r} ended at turn {ep.done_turn} (done=true); Close it instead of stepping turn {t}"
            )
        if t != ep.next_turn:
            raise EnvError.invalid(
                f"turn {t} of episode {name!r}, but the next turn is {ep.next_turn}: "
                f"send turns in order, 0-based (a retry repeats the same turn)"
            )
        previous = ep.turns.get(t - 1)
        if previous is not None and not previous.done():
            raise EnvError.finished(
                f"turn {t - 1} of episode {name!r} is still being answered; wait for its answer before turn {t}"
            )
        if previous is not None and (previous.cancelled() or previous.exception() is not None):
            raise EnvError.finished(f"turn {t - 1} of episode {name!r} failed; the episode cannot go on: Close it")

    async def _step(self, ep: Episode, request: env_pb2.StepRequest) -> env_pb2.StepResponse:
        turn = turn_from_proto(request)
        what = f"{type(ep.env).__name__}.step (episode {request.episode_id!r}, turn {turn.index})"
        value = await guarded(what, ep.env.step, self.pool, turn)
        try:
            answer = step_response(value)
        except ValueError as err:
            raise internal(err, what) from None
        if answer.done:
            ep.done_turn = turn.index
        return answer

    async def close(self, episode_id: str) -> None:
        """Forget the episode after its running work ends; closing an unknown id is a no-op."""
        opening = self.opening.get(episode_id)
        if opening is not None:
            await asyncio.wait([opening])
        ep = self.open.pop(episode_id, None)
        if ep is not None:
            await self._finish(episode_id, ep)

    async def _finish(self, episode_id: str, ep: Episode) -> None:
        running = [t for t in ep.turns.values() if not t.done()]
        if running:  # one method at a time per episode: close waits for the step
            await asyncio.wait(running)
        await guarded(f"{type(ep.env).__name__}.close (episode {episode_id!r})", ep.env.close, self.pool)

    def close_idle(self) -> None:
        cutoff = time.monotonic() - self.idle_s
        for episode_id in [k for k, ep in self.open.items() if ep.last_used < cutoff]:
            log.info("closing episode %r: idle for more than %g s", episode_id, self.idle_s)
            background(self._finish(episode_id, self.open.pop(episode_id)))


def _done(value) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future
