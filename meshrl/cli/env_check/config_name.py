"""Does the environment service serve the run config's environment.name? `meshrl doctor`
asks with the launcher's own Reset under that name (meshrl.launch.environment_name): health
says SERVING for any name, so a server that serves `Mul` while the config says `mulenv`
passed the doctor and then dropped every group of the run ("not served here"). One row per
address, named like the health row.

    row = await name_row(cfg.environment, "127.0.0.1:50081", timeout_s=2)
"""

from __future__ import annotations

from meshrl.cli.env_check.names import rename_fix
from meshrl.cli.reward_check.table import FAIL, INFO, PASS, Row
from meshrl.launch.environment_name import reset_error, served_instead


async def name_row(env, address: str, timeout_s: float) -> Row:
    """FAIL only when the server says it does not serve the name; any other answer is not
    about the name (a task field it wants, say): INFO with that answer."""
    check = f"environment {env.name!r} at {address} serves that name"
    try:
        err = await reset_error(env, address, timeout_s)
    except ValueError as missing:  # the token's variable or file is missing: the config check names it
        return Row(check, INFO, f"not asked: {missing}")
    served = served_instead(err)
    if served is not None:
        names = ", ".join(repr(n) for n in served)
        detail = f"the server serves {names}, not the run config's environment.name {env.name!r}"
        return Row(check, FAIL, detail, rename_fix(env.name, served, "environment.name"))
    if err is None:
        return Row(check, PASS, f"a Reset under {env.name!r} was answered")
    answer = f"{err.code().name}: {err.details() or ''}"[:200]
    return Row(check, INFO, f"a Reset under {env.name!r} answered {answer} (not about its name)")
