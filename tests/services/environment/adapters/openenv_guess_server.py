"""A real OpenEnv environment server for the adapter's tests, built with OpenEnv's own server
classes (openenv.core.env_server: Environment, Action, Observation, create_app) and served by
uvicorn; it runs in the openenv adapter venv, never in meshrl's.

    .venv-adapters/openenv/bin/python tests/services/environment/adapters/openenv_guess_server.py \
        --port 8000 [--malformed]

The game: guess a number from 1 to 10. The target is `seed % 10 + 1` (7 without a seed). The
action's `message` is read for its last integer; a right guess ends the episode with reward
1.0 - 0.25 * (wrong guesses before it); a wrong one answers "higher" or "lower", reward 0.0;
the fourth wrong guess ends it with reward 0.0. The observation's `prompt` is the text shown.
Misbehaviour for the adapter's fault tests, chosen per episode by reset's `behaviour`:
  endless    never ends the episode (each guess: "again", reward 0.0)
  die        the whole server exits at the episode's second step (a server dying mid-episode)
  hang       steps are never answered
and for the whole server by --malformed: every WebSocket message is answered with text that is
not JSON.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import time
from typing import Optional

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from starlette.routing import WebSocketRoute

MAX_WRONG = 4


class GuessAction(Action):
    message: str


class GuessObservation(Observation):
    prompt: str


class GuessEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self._state = State(step_count=0)
        self.target, self.wrong, self.behaviour = 7, 0, ""

    def reset(
        self, seed: Optional[int] = None, episode_id: Optional[str] = None, behaviour: str = "", **kwargs
    ) -> GuessObservation:
        self.target = 7 if seed is None else seed % 10 + 1
        self.wrong, self.behaviour = 0, behaviour
        self._state = State(episode_id=episode_id, step_count=0)
        return GuessObservation(prompt="Guess my number, from 1 to 10.", metadata={"episode_id": episode_id})

    def step(self, action: GuessAction, timeout_s=None, **kwargs) -> GuessObservation:
        self._state.step_count += 1
        if self.behaviour == "die" and self._state.step_count == 2:
            os._exit(3)
        if self.behaviour == "hang":
            time.sleep(3600)
        numbers = re.findall(r"-?\d+", action.message)
        guess = int(numbers[-1]) if numbers else None
        if self.behaviour == "endless":
            return GuessObservation(prompt="again", reward=0.0)
        if guess == self.target:
            return GuessObservation(prompt="right", reward=1.0 - 0.25 * self.wrong, done=True)
        self.wrong += 1
        hint = "no number read" if guess is None else ("higher" if guess < self.target else "lower")
        return GuessObservation(prompt=hint, reward=0.0, done=self.wrong >= MAX_WRONG, metadata={"guess": guess})

    @property
    def state(self) -> State:
        return self._state


async def malformed_ws(websocket):
    await websocket.accept()
    while True:
        await websocket.receive_text()
        await websocket.send_text("{this is not json")


def app_for(malformed: bool):
    app = create_app(GuessEnvironment, GuessAction, GuessObservation, env_name="guess", max_concurrent_envs=64)
    if malformed:  # the first matching route wins: this one shadows OpenEnv's /ws
        app.router.routes.insert(0, WebSocketRoute("/ws", malformed_ws))
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True, help="0: any free port (printed once bound)")
    parser.add_argument("--malformed", action="store_true")
    args = parser.parse_args()
    # Bound here, then announced, so a test can start it on port 0 with no pick-then-bind race.
    sock = socket.create_server(("127.0.0.1", args.port))
    print(f"listening on 127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app_for(args.malformed), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
