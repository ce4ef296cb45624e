"""The run's environment: a service at `environment.address` answers grpc.health.v1 SERVING
for EnvironmentService (one result per address, over its TLS: meshrl.cli.env_check.health);
a built-in the launcher starts can be built on this machine (the `python` tool needs
namespaces for its sandbox: `python -m meshrl.services.environment --check` says, run as a
process so the core never imports a service)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from meshrl.cli.doctor.check import Check, failed, passed, run_async, skipped
from meshrl.services.environment.adapters.textarena import probe as textarena_probe
from meshrl.services.environment.adapters.verifiers.probe import ProbeFailed, probe
from meshrl.transport.http_health import http_health

NAME = "environment"


def _check_builtin(env) -> Check:
    name = f"environment {env.name!r} (builtin {env.builtin})"
    done = subprocess.run(
        [sys.executable, "-m", "meshrl.services.environment", "--check", "--port", "0", "--environments", env.served],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        return failed(
            name,
            (done.stderr.strip() or done.stdout.strip())[-500:],
            "see the message: the python tool needs a host that can make namespaces "
            "(docs/environments.md), or use another builtin",
        )
    return passed(name, done.stdout.strip() or "can be served here")


def _check_openenv(env) -> Check:
    name = f"environment {env.name!r} (OpenEnv server {env.openenv.url})"
    reason = http_health(env.openenv.url, timeout_s=min(env.openenv.timeout_s, 10.0))
    if reason:
        return failed(
            name, reason, "start the OpenEnv server first (its own process or container) or fix environment.openenv.url"
        )
    return passed(name, "answers GET /health")


def _check_verifiers(env) -> Check:
    name = f"environment {env.name!r} (verifiers module {env.verifiers.module})"
    try:
        return passed(name, probe(env.verifiers))
    except ProbeFailed as err:
        return failed(
            name,
            str(err),
            "build the venv (bash scripts/adapter_venv.sh verifiers), install the environment into it "
            "(.venv-adapters/verifiers/bin/pip install ./my_env) or fix environment.verifiers",
        )


def _check_textarena(env) -> Check:
    name = f"environment {env.name!r} (textarena game {env.textarena.game})"
    try:
        return passed(name, textarena_probe.probe(env.textarena))
    except textarena_probe.ProbeFailed as err:
        return failed(
            name, str(err), "build the venv (bash scripts/adapter_venv.sh textarena) or fix environment.textarena"
        )


def check_environment(ctx) -> list[Check]:
    from meshrl.cli.env_check.health import environment_health  # lazy: grpc at CLI start-up

    if ctx.config is None or ctx.config.environment is None:
        return [skipped(NAME, "no environment in the config (single-turn tasks)")]
    env = ctx.config.environment
    if env.openenv is not None and env.launched:
        return [_check_openenv(env)]
    if env.verifiers is not None and env.launched:
        return [_check_verifiers(env)]
    if env.textarena is not None and env.launched:
        return [_check_textarena(env)]
    if env.launched:
        return [_check_builtin(env)]
    rows = run_async(environment_health(env, timeout_s=ctx.reward_timeout_s))
    checks = [_health_check(r) for r in rows]
    up = [a for a, r in zip(env.addresses, rows) if r.outcome == "PASS"]
    return checks + [_name_check(r) for r in run_async(_name_rows(env, up, ctx.reward_timeout_s))]


def _health_check(r) -> Check:
    if r.outcome == "PASS":
        return passed(r.check, r.detail)
    return failed(
        r.check,
        r.detail,
        f"start the environment service at that address or fix environment.address; "
        f"then `meshrl env check ADDRESS`. {r.fix}",
    )


async def _name_rows(env, addresses: list[str], timeout_s: float) -> list:
    """A Reset under environment.name at every replica that is up: SERVING says nothing of names."""
    from meshrl.cli.env_check.config_name import name_row  # lazy: grpc at CLI start-up

    return list(await asyncio.gather(*(name_row(env, a, timeout_s) for a in addresses)))


def _name_check(r) -> Check:
    if r.outcome == "FAIL":
        return failed(r.check, r.detail, r.fix)
    return passed(r.check, r.detail) if r.outcome == "PASS" else skipped(r.check, r.detail)
