"""Does the environment service serve the run config's environment.name? `meshrl doctor`
asks with one Reset under that name: health says SERVING for any name, so a server that
serves `Mul` while the config says `mulenv` passed the doctor and then dropped every group
of the run ("not served here"). One row per address, named like the health row.

    row = await name_row(cfg.environment, "127.0.0.1:50081", timeout_s=2)
"""

from __future__ import annotations

from meshrl.cli.env_check.health import config_channel
from meshrl.cli.env_check.kit import Kit
from meshrl.cli.env_check.names import not_served, rename_fix
from meshrl.cli.env_check.task import DEFAULT_ROW, task_request
from meshrl.cli.reward_check.table import FAIL, INFO, PASS, Row
from meshrl.launch.environment_name import bearer_token


def token_metadata(env) -> tuple[tuple[str, str], ...]:
    """The config's bearer token (environment.token_env / token_file) as call metadata."""
    token = bearer_token(env)
    return () if token is None else (("authorization", f"Bearer {token}"),)


async def name_row(env, address: str, timeout_s: float) -> Row:
    """FAIL only when the server says it does not serve the name; any other answer is not
    about the name (a task field it wants, say): INFO with that answer."""
    check = f"environment {env.name!r} at {address} serves that name"
    try:
        metadata = token_metadata(env)
    except ValueError as err:  # the token's variable or file is missing: the config check names it
        return Row(check, INFO, f"not asked: {err}")
    async with config_channel(env, address) as channel:
        kit = Kit(channel, task_request(DEFAULT_ROW, env.name), timeout_s, metadata)
        episode_id = kit.new_id()
        answer = await kit.reset(episode_id)
        await kit.close(episode_id)
    named = not_served(answer)
    if named is not None:
        served = ", ".join(repr(n) for n in named[1])
        detail = f"the server serves {served}, not the run config's environment.name {env.name!r}"
        return Row(check, FAIL, detail, rename_fix(env.name, named[1], "environment.name"))
    if answer.ok:
        return Row(check, PASS, f"a Reset under {env.name!r} was answered")
    return Row(check, INFO, f"a Reset under {env.name!r} answered {answer.status()[:200]} (not about its name)")
