"""One verifiers episode played turn by turn (library side: runs in the verifiers venv).

The environment's own rollout loop runs unchanged (`env.rollout(row, client, ...)`: its
setup_state, stop conditions, env_response, tool calls, final_env_response and cleanup).
Only its model client is ours: `TurnClient.get_response` hands the prompt the loop built to
meshrl (Reset answers with the first, each Step with the next) and waits for the model's
turn, which meshrl's Step brings. So the loop pauses exactly where it would wait for a model
server, and the tokens stay meshrl's: the environment only ever sees the turn's text and
parsed tool calls, never re-tokenises anything.

    episode = Episode(env); episode.start(dataset_row)
    kind, value = await episode.next_event()   # ("ask", (prompt, tools)) or ("done", result)
    episode.answer(response)                   # the model's turn as a vf.Response
"""

import asyncio

from verifiers.clients import Client
from vf_scores import score


class EpisodeError(RuntimeError):
    """The environment's rollout failed (its state carries an error, or the loop raised)."""


class TurnClient(Client):
    """verifiers' model client, answered by the model's turns meshrl sends in Step."""

    def __init__(self, episode: "Episode"):
        super().__init__(episode)
        self.episode = episode

    def setup_client(self, config):
        return None

    async def to_native_tool(self, tool):
        return tool

    async def to_native_prompt(self, messages):
        return messages, {}

    async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs):
        raise NotImplementedError("TurnClient answers in get_response")

    async def raise_from_native_response(self, response):
        return None

    async def from_native_response(self, response):
        return response

    async def close(self):
        return None

    async def get_response(self, prompt, model, sampling_args, tools=None, **kwargs):
        return await self.episode.ask_model(list(prompt), list(tools or []))


class Episode:
    def __init__(self, env):
        self.env = env
        self.events: asyncio.Queue = asyncio.Queue()  # ("ask", (prompt, tools)), ("done", result), ("error", exc)
        self.turns: asyncio.Queue = asyncio.Queue()  # the model's turns, as vf.Response
        self.seen = 0  # messages of the conversation the model has read
        self.hidden: set = set()  # this turn's refused call ids (meshrl answered them)
        self.task: asyncio.Task | None = None

    def start(self, row: dict) -> None:
        self.task = asyncio.create_task(self._run(row))

    async def _run(self, row: dict) -> None:
        try:
            state = await self.env.rollout(row, TurnClient(self), "meshrl", {})
            if state.get("error") is not None:
                raise EpisodeError(f"the environment's rollout failed: {state['error']!r}")
            total, details, weights = await score(self.env, state)
            await self.events.put(("done", {"state": state, "reward": total, "details": details, "weights": weights}))
        except Exception as err:
            await self.events.put(("error", err))

    async def ask_model(self, prompt: list, tools: list):
        await self.events.put(("ask", (prompt, tools)))
        return await self.turns.get()

    def answer(self, response) -> None:
        self.turns.put_nowait(response)

    async def next_event(self) -> tuple:
        kind, value = await self.events.get()
        if kind == "error":
            raise value
        return kind, value

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
