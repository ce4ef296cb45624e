"""Is the run's environment service up? grpc.health.v1 SERVING for EnvironmentService at every
address of `environment.address` ("a:1,b:2" lists replicas), over its TLS when configured
(a failed connection named: plaintext against TLS, a refused certificate, no client one).
Used by `meshrl doctor` (one row per address); `meshrl train` waits for the same answer before
any process starts (meshrl.launch.environment).

    rows = await environment_health(cfg.environment, timeout_s=2)        # [Row per address]
"""

from __future__ import annotations

import asyncio

from meshrl.cli.env_check.suite import HEALTH_FIX, SERVICE
from meshrl.cli.reward_check.connect import open_check_channel
from meshrl.cli.reward_check.probes import health_row
from meshrl.cli.reward_check.table import Row
from meshrl.cli.reward_check.tls_probe import TlsProbe

CONFIG_LABELS = (  # the doctor's fixes name the run config's keys, not the kit's flags
    ("ca", "environment.tls.ca_file"),
    ("cert", "environment.tls.cert_file"),
    ("key", "environment.tls.key_file"),
    ("server_name", "environment.tls.server_name"),
)


async def one_address(env, address: str, timeout_s: float) -> Row:
    tls = env.tls
    channel = open_check_channel(
        address,
        tls_ca=tls.ca_file if tls else None,
        tls_cert=tls.cert_file if tls else None,
        tls_key=tls.key_file if tls else None,
        server_name=tls.server_name if tls else None,
        who=f"environment {env.name!r}",
    )
    probe = TlsProbe(
        address,
        tls.ca_file if tls else None,
        tls.cert_file if tls else None,
        tls.key_file if tls else None,
        tls.server_name if tls else None,
        labels=CONFIG_LABELS,
    )
    async with channel:
        row = await health_row(channel, (), timeout_s, service=SERVICE, fix=HEALTH_FIX, probe=probe)
    return Row(f"environment {env.name!r} at {address}", row.outcome, row.detail, row.fix)


async def environment_health(env, timeout_s: float = 2.0) -> list[Row]:
    return list(await asyncio.gather(*(one_address(env, a, timeout_s) for a in env.addresses)))
