"""A verifiers environment as a meshrl Environment: each Reset/Step/Close is one call to the
library worker child that holds the environment (handlers.py, in the verifiers venv).

    cls, info = await start_worker_environment(VerifiersEnvironment, settings, block, HANDLERS, python, params)
    serve({"sums": cls}, port=50090)

The mapping (docs/environments.md, "Environments you already have"):
- Reset: the task's `extra_info.verifiers.row` (written by `meshrl data verifiers`) picks the
  dataset row; the environment's own rollout loop starts on it and stops where it asks the
  model; its prompt must be the task's prompt (the rows are the environment's), messages it
  added after it are the observation, its tools (verifiers' tool schemas) the episode's tools.
- Step: the model's turn (text, parsed tool calls and the calls meshrl refused) is the
  model's answer in that loop (tool results to refused calls left out: meshrl answered them); what
  the loop asks next (tool results, the environment's reply) is the observation; when the
  loop ends the rubric scores the episode: its weighted total is the turn's reward and each
  rubric function's score is in the answer's info under `reward_details`.
- A child that died is started again for the next Reset; the episodes it held are gone
  (NOT_FOUND: their groups are dropped, never trained half-done): worker_environment.py.
"""

from __future__ import annotations

from typing import Any

from meshrl.env_sdk import EnvError, FunctionTool, Reset, Step
from meshrl.services.environment.adapters.worker_environment import WorkerEnvironment

# Errors of the handlers that are the caller's (a row that is not there, a prompt that is not
# the row's, an episode the child does not hold), not the environment's.
CALLER_ERRORS = {"IndexError": EnvError.invalid, "ValueError": EnvError.invalid, "KeyError": EnvError.not_found}


class SchemaTool(FunctionTool):
    """A tool known by its schema only: the environment runs it, meshrl only offers it."""

    def __init__(self, name: str, description: str, parameters: dict[str, Any]):
        self.fn, self.is_async, self.arguments = None, False, None
        self.name, self.description, self.parameters = name, description, parameters


class VerifiersEnvironment(WorkerEnvironment):
    library, subject_key, caller_errors = "verifiers", "module", CALLER_ERRORS

    async def reset(self, task) -> Reset:
        await self.revive()
        params = {"episode_id": task.episode_id, "row": row_of(task, self.block.split), "split": self.block.split}
        answer = await self.ask("reset", {**params, "messages": task.messages})
        self.open = True
        tools = [SchemaTool(t["name"], t["description"], t["parameters"]) for t in answer["tools"]]
        return Reset(answer["observation"], tools=tools, info=answer["info"])

    async def step(self, turn) -> Step:
        # Calls meshrl refused go to the environment too (they are the model's turn as written,
        # so its state counts them and goes on), but meshrl already told the model why: the
        # environment's own answers to them are left out of the observation.
        calls = [*turn.tool_calls, *turn.rejected_tool_calls]
        params = {
            "episode_id": self.task.episode_id,
            "text": turn.text,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments_json": c.arguments_json} for c in calls],
            "rejected": [c.id for c in turn.rejected_tool_calls],
        }
        answer = await self.ask("step", {**params, "truncated": turn.truncated})
        self.open = not answer["done"]
        return Step(answer["observation"], reward=answer.get("reward"), done=answer["done"], info=answer.get("info"))


def row_of(task, split: str) -> int:
    """The dataset row the task names (`extra_info.verifiers.row`); INVALID_ARGUMENT without one."""
    block = task.extra.get("verifiers") if isinstance(task.extra, dict) else None
    row = block.get("row") if isinstance(block, dict) else None
    if isinstance(row, bool) or not isinstance(row, int):
        raise EnvError.invalid(
            "the task carries no extra_info.verifiers.row (the environment's dataset row): make the "
            "run's rows with `meshrl data verifiers --module NAME --out FILE`"
        )
    if isinstance(block.get("split"), str) and block["split"] != split:
        raise EnvError.invalid(
            f"the task is a row of the {block['split']!r} split; the service plays {split!r} (environment.verifiers.split)"
        )
    return row
