"""Rows for one episode's life: Reset, its idempotency, Step, its idempotency, tool calls,
the end of the episode, and Close. Answers are checked as they come in with the rollout's own
check (meshrl.env_sdk.contract), so what passes here is what a run accepts."""

from __future__ import annotations

import grpc

from meshrl.api.env.v1 import env_pb2
from meshrl.cli.env_check.kit import Answer, Kit
from meshrl.cli.env_check.names import not_served, rename_fix
from meshrl.cli.reward_check.table import FAIL, INFO, PASS, Row
from meshrl.env_sdk.contract import reset_problems, step_problems

MAX_TURNS = 8  # turns the kit plays before it calls an episode endless
IDEMPOTENT_FIX = (
    "keep each open episode's first answer and return it again for a retry: Reset by episode_id, "
    "Step by (episode_id, turn); meshrl retries after UNAVAILABLE and a retry must not advance "
    "the episode twice (meshrl.env_sdk does it)"
)


def fix_for(answer: Answer) -> str:
    code = answer.code
    if answer.invalid:
        return (
            "answer with a serialized ResetResponse / StepResponse (generated stubs do it); the rollout "
            "drops an episode whose answer does not parse"
        )
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return "register meshrl.env.v1.EnvironmentService (protos/meshrl/env/v1/env.proto) on this server"
    if code == grpc.StatusCode.UNAVAILABLE:
        return "start the service, check ADDRESS and the TLS flags (--tls-ca for a TLS server)"
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return "pass the server's bearer token with --token-file"
    if (named := not_served(answer)) is not None:
        return rename_fix(*named, "--environment and the run config's environment.name")
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return "if your environment needs particular task fields, give it a dataset row with --task FILE"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "answer within the call's deadline (raise it with --timeout if your environment is meant to be slower)"
    return "answer the call; a failure of your environment is INTERNAL with a message saying what broke"


class Episode:
    """The kit's main episode: its id, its first answers, and every contract problem seen."""

    def __init__(self, kit: Kit, problems: list[str]):
        self.kit, self.problems = kit, problems
        self.id = kit.new_id()
        self.first: Answer | None = None
        self.turns = 0
        self.done_at: int | None = None

    async def reset_row(self) -> Row:
        self.first = await self.kit.reset(self.id)
        if not self.first.ok:
            return Row("reset", FAIL, f"Reset failed: {self.first.status()}", fix_for(self.first))
        self.problems += reset_problems(self.first.reply, "Reset")
        names = ", ".join(t.name for t in self.first.reply.tools) or "none"
        return Row("reset", PASS, f"{len(self.first.reply.observation)} observation message(s); tools: {names}")

    async def reset_again_row(self) -> Row:
        again = await self.kit.reset(self.id)
        if not again.ok:
            return Row(
                "reset is idempotent", FAIL, f"a second Reset of an open episode: {again.status()}", IDEMPOTENT_FIX
            )
        if again.reply != self.first.reply:
            return Row(
                "reset is idempotent", FAIL, "a second Reset of the same id answered differently", IDEMPOTENT_FIX
            )
        return Row("reset is idempotent", PASS, "the same answer for the same episode id")

    async def step_rows(self) -> list[Row]:
        first = await self.kit.step(self.id, 0)
        if not first.ok:
            return [Row("step", FAIL, f"Step turn 0 failed: {first.status()}", fix_for(first))]
        self.problems += step_problems(first.reply, "Step turn 0")
        self.turns, self.done_at = 1, 0 if first.reply.done else None
        return [
            Row("step", PASS, f"turn 0 answered (done={first.reply.done})"),
            retried_row(first, await self.kit.step(self.id, 0)),
        ]

    async def play_to_the_end_row(self) -> Row:
        while self.done_at is None and self.turns < MAX_TURNS:
            answer = await self.kit.step(self.id, self.turns)
            if not answer.ok:
                return Row("episode ends", FAIL, f"Step turn {self.turns}: {answer.status()}", fix_for(answer))
            self.problems += step_problems(answer.reply, f"Step turn {self.turns}")
            self.done_at = self.turns if answer.reply.done else None
            self.turns += 1
        if self.done_at is None:
            return Row(
                "episode ends",
                INFO,
                f"not done after {MAX_TURNS} turns (fine for a stateless tool server; "
                "meshrl ends episodes at rollout.agent.max_turns)",
            )
        return Row("episode ends", PASS, f"done at turn {self.done_at}")

    async def after_done_row(self) -> Row | None:
        if self.done_at is None:
            return None
        after = await self.kit.step(self.id, self.done_at + 1)
        good = after.code == grpc.StatusCode.FAILED_PRECONDITION
        return Row(
            "step after done → FAILED_PRECONDITION",
            PASS if good else FAIL,
            after.status(),
            "" if good else "answer a Step on an episode that said done with FAILED_PRECONDITION",
        )

    async def close_rows(self) -> list[Row]:
        first, second = await self.kit.close(self.id), await self.kit.close(self.id)
        rows = [
            Row(
                "close (twice)",
                PASS if first.ok and second.ok else FAIL,
                f"first {first.status()}, second {second.status()}",
                ""
                if first.ok and second.ok
                else "Close forgets the episode and succeeds, also for an unknown or already closed id",
            )
        ]
        after = await self.kit.step(self.id, self.turns)
        good = after.code == grpc.StatusCode.NOT_FOUND
        rows.append(
            Row(
                "step after close → NOT_FOUND",
                PASS if good else FAIL,
                after.status(),
                "" if good else "a Step on a closed episode is NOT_FOUND (meshrl drops the episode)",
            )
        )
        return rows


def retried_row(first: Answer, again: Answer) -> Row:
    if not again.ok:
        return Row("step is idempotent", FAIL, f"a retried turn 0: {again.status()}", IDEMPOTENT_FIX)
    if again.reply != first.reply:
        return Row("step is idempotent", FAIL, "a retried turn 0 answered differently", IDEMPOTENT_FIX)
    return Row("step is idempotent", PASS, "the same answer for a retried turn")


async def tool_call_row(kit: Kit, tools: list[env_pb2.Tool], problems: list[str]) -> Row:
    """Malformed calls (bad JSON, an unknown tool, no arguments) must be answered, not crash."""
    if not tools:
        return Row("malformed tool calls answered", INFO, "the environment offers no tools")
    episode_id = kit.new_id()
    await kit.reset(episode_id)
    calls = [
        env_pb2.ToolCall(id="c0", name=tools[0].name, arguments_json="{not json"),
        env_pb2.ToolCall(id="c1", name="meshrl_check_no_such_tool", arguments_json="{}"),
        env_pb2.ToolCall(id="c2", name=tools[0].name, arguments_json="{}"),
    ]
    answer = await kit.step(episode_id, 0, text="<tool_call>...</tool_call>", tool_calls=calls)
    await kit.close(episode_id)
    if not answer.ok:
        return Row(
            "malformed tool calls answered",
            FAIL,
            f"Step with bad JSON, an unknown tool and no arguments: {answer.status()}",
            "answer a bad tool call with an error observation (role "
            "'tool') the model can read and correct; never fail the call (meshrl.env_sdk does it)",
        )
    problems += step_problems(answer.reply, "Step with malformed tool calls")
    return Row("malformed tool calls answered", PASS, f"{len(answer.reply.observation)} observation message(s)")


async def refused_call_row(kit: Kit, tools: list[env_pb2.Tool], problems: list[str]) -> Row:
    """A turn whose only call meshrl refused is no final answer: done=false, so the model reads
    meshrl's error and tries again (INFO when done: allowed, but the model never learns why)."""
    name = "a turn of refused calls is no answer"
    if not tools:
        return Row(name, INFO, "the environment offers no tools")
    episode_id = kit.new_id()
    await kit.reset(episode_id)
    text = "<tool_call>{not json</tool_call>"
    refused = env_pb2.RejectedToolCall(id="call_0_0", raw_text=text, reason="the call is not valid JSON")
    answer = await kit.call(
        "Step", env_pb2.StepRequest(episode_id=episode_id, turn=0, text=text, rejected_tool_calls=[refused])
    )
    await kit.close(episode_id)
    if not answer.ok:
        return Row(name, FAIL, f"Step with one refused call: {answer.status()}", fix_for(answer))
    problems += step_problems(answer.reply, "Step with a refused call")
    if answer.reply.done:
        return Row(
            name,
            INFO,
            "answered done: the model never reads meshrl's error for its malformed call; answer done=false "
            "when tool_calls is empty and rejected_tool_calls is not (docs/environments.md, refused calls)",
        )
    return Row(name, PASS, "done=false: the model reads meshrl's error and tries again")


async def group_row(kit: Kit) -> Row:
    """Two episodes of one group (one group_seed, two episode seeds) should get one task: GRPO
    compares them. INFO, not a failure, when their first answers differ (a first view may
    legitimately vary), naming the likely cause."""
    name = "one task per group (group_seed)"
    ids = [kit.new_id(), kit.new_id()]
    firsts = [await kit.reset(i, seed=seed, group_seed=kit.task.group_seed or 1) for i, seed in zip(ids, (11, 12))]
    for i in ids:
        await kit.close(i)
    failed = next((a for a in firsts if not a.ok), None)
    if failed is not None:
        return Row(name, FAIL, f"Reset with another episode seed: {failed.status()}", fix_for(failed))
    if firsts[0].reply != firsts[1].reply:
        return Row(
            name,
            INFO,
            "two episodes of one group (same group_seed, seeds 11 and 12) got different first answers; if the "
            "task is drawn from ResetRequest.seed, draw it from group_seed so a group plays one task",
        )
    return Row(name, PASS, "two episodes of one group (seeds 11 and 12) got the same first answer")
