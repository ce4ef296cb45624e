"""The environment conformance suite: health, reflection, one episode's life, tool calls,
the statuses of bad requests, the token, a deadline, concurrent episodes, then one row for
every contract problem seen in any answer."""

from __future__ import annotations

from grpc import aio

from meshrl.api.env.v1 import env_pb2
from meshrl.cli.env_check.episode_checks import Episode, group_row, refused_call_row, tool_call_row
from meshrl.cli.env_check.error_checks import garbage_row, status_rows, token_row
from meshrl.cli.env_check.kit import Kit
from meshrl.cli.env_check.load_checks import concurrent_row, deadline_row
from meshrl.cli.env_check.names import name_row
from meshrl.cli.env_check.root_cause import blamed, sdk_refusals
from meshrl.cli.reward_check.probes import health_fix, health_row, reflection_row
from meshrl.cli.reward_check.table import FAIL, PASS, Row
from meshrl.cli.reward_check.tls_probe import TlsProbe

SERVICE = "meshrl.env.v1.EnvironmentService"
HEALTH_FIX = health_fix(SERVICE, "meshrl.env_sdk")
CONTRACT_FIX = (
    "Reset's observation roles are system, user or tool, a Step's tool or user (the rollout drops "
    "an episode whose answer has another); tool names 1-64 of A-Z a-z 0-9 _ -, each once, "
    "parameters_json a valid JSON Schema of type object; info_json a JSON object or ''; a reward "
    "finite (meshrl.env_sdk.contract, protos/meshrl/env/v1/env.proto)"
)


async def episode_rows(kit: Kit, problems: list[str]) -> list[Row]:
    episode = Episode(kit, problems)
    rows = [await episode.reset_row()]
    if not episode.first.ok:
        return rows + [Row("episode", FAIL, "not run: Reset failed", "fix the reset row first")]
    rows += [await episode.reset_again_row(), *await episode.step_rows()]
    if episode.turns:
        rows.append(await episode.play_to_the_end_row())
        rows += [r for r in [await episode.after_done_row()] if r]
    rows += await episode.close_rows()
    tools = list(episode.first.reply.tools)
    rows += [await tool_call_row(kit, tools, problems), await refused_call_row(kit, tools, problems)]
    return rows + [await group_row(kit)]


async def run_suite(
    channel: aio.Channel,
    *,
    task: env_pb2.ResetRequest,
    timeout_s: float = 30.0,
    metadata: tuple = (),
    probe: TlsProbe | None = None,
) -> list[Row]:
    """Every check, in order; never raises for a misbehaving server (its rows FAIL). With
    `probe`, a connection that fails (TLS, nothing listening) is one row naming why."""
    kit = Kit(channel, task, timeout_s, tuple(metadata))
    health = await health_row(channel, metadata, fix=HEALTH_FIX, probe=probe)
    if health.blocking:
        return [health]
    rows = [
        health,
        await health_row(channel, metadata, service=SERVICE, fix=HEALTH_FIX),
        await reflection_row(channel, metadata, service=SERVICE),
    ]
    rows += [r for r in [await name_row(kit)] if r]
    problems: list[str] = []
    rows += await episode_rows(kit, problems)
    rows += await status_rows(kit)
    rows.append(await garbage_row(channel, kit))
    rows += [r for r in [await token_row(kit)] if r]
    rows += await load_rows(kit, channel, metadata, health)
    contract = contract_row(problems + sdk_refusals(rows))
    return blamed(rows, contract, len(rows) + 1) + [contract]


async def load_rows(kit: Kit, channel: aio.Channel, metadata: tuple, health: Row) -> list[Row]:
    """A deadline and concurrent episodes; the deadline row asks whether the server still
    serves afterwards (only when it did before)."""

    async def serving() -> bool:
        return health.outcome != PASS or (await health_row(channel, metadata)).outcome == PASS

    return [await deadline_row(kit, serving), await concurrent_row(kit)]


def contract_row(problems: list[str]) -> Row:
    """One row for every contract problem seen in any answer: the first two, and how many more."""
    if not problems:
        return Row("answers follow the contract", PASS, "in every answer received")
    more = f" (+{len(problems) - 2} more)" if len(problems) > 2 else ""
    return Row("answers follow the contract", FAIL, "; ".join(problems[:2]) + more, CONTRACT_FIX)
