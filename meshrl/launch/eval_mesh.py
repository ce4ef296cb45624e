"""A mesh for offline evaluation: NATS, rollout and reward as processes, nothing else.

    with eval_mesh(cfg, work_dir) as mesh:        # blocks until every replica announced itself
        mesh.rollout, mesh.reward                  # their gRPC addresses (host:port lists)

Uses the training launcher's machinery (`meshrl.launch.run_dir`, `specs`): the resolved config is
written to WORK_DIR/config.yaml, NATS is embedded in WORK_DIR/nats (or `nats.url`), the
run's streams are created once, rollout × rollout.replicas and reward × reward.replicas are
started by a `Supervisor` with their usual environment and logs in WORK_DIR/logs, each on a
free gRPC port. It waits until they are all announced in the run KV (`meshrl.transport.bus.registry`),
then yields. With `launch.grpc_tls` (mutual by default) the replicas serve the run's mutual TLS
like a training run's (meshrl.launch.secrets) and `mesh.grpc_env` is the admin's certificate,
which the evaluating process presents (`with caller_env(mesh.grpc_env):`). On the way out
(also on an error, Ctrl-C or SIGTERM) every process is stopped.

Raises LaunchError when NATS cannot be reached or the services are not up within
`start_timeout_s`, RunFailed when one of them dies while starting (with its log's tail).

Run: meshrl eval RUN_DIR DATA.jsonl   (this is what it calls)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from meshrl.config.schema import RunConfig
from meshrl.errors import LaunchError, RunFailed
from meshrl.launch.nats import create_streams, nats_url
from meshrl.launch.run_dir import make_run_id, prepare_run_dir
from meshrl.launch.secrets import grpc_tls_env, run_grpc_tls
from meshrl.launch.specs import sampling_specs, service_argv
from meshrl.launch.supervisor import ChildDied, Supervisor, stop_on_signals
from meshrl.run.secrets import grpc_user_env, secrets_dir
from meshrl.run_layout import RunDir
from meshrl.transport.bus import Bus
from meshrl.transport.bus.registry import service_addresses


@dataclass(frozen=True)
class EvalMesh:
    run_id: str
    nats_url: str
    rollout: list[str]
    reward: list[str]
    grpc_env: dict[str, str]  # the admin's MESHRL_GRPC_TLS_* ({} with launch.grpc_tls off)


async def _announced(url: str, run_id: str) -> tuple[list[str], list[str]]:
    async with await Bus.connect(url, run_id, name="meshrl-eval") as bus:
        return (await service_addresses(bus.state, "rollout"), await service_addresses(bus.state, "reward"))


def wait_for_services(
    sup: Supervisor, cfg: RunConfig, url: str, run_id: str, *, timeout_s: float, poll_s: float = 1.0
) -> tuple[list[str], list[str]]:
    """(rollout, reward) addresses once every replica is announced; a death raises RunFailed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            sup.check()
        except ChildDied as err:
            raise RunFailed(str(err)) from None
        rollout, reward = asyncio.run(_announced(url, run_id))
        if len(rollout) >= cfg.rollout.replicas and len(reward) >= cfg.reward.replicas:
            return rollout, reward
        if time.monotonic() > deadline:
            raise LaunchError(
                f"rollout/reward not up within {timeout_s:g} s ({len(rollout)} of "
                f"{cfg.rollout.replicas} rollout, {len(reward)} of "
                f"{cfg.reward.replicas} reward announced); see {sup.log_dir}"
            )
        time.sleep(poll_s)


@contextlib.contextmanager
def eval_mesh(
    cfg: RunConfig, work_dir: str | Path, *, start_timeout_s: float = 600.0, grace_s: float = 15.0
) -> Iterator[EvalMesh]:
    """Start NATS + rollout + reward for `cfg`, yield their addresses, stop them all."""
    work_dir = Path(work_dir)
    cfg, config_path = prepare_run_dir(cfg, work_dir)
    run_id = make_run_id(cfg.run.name if cfg.run.name.startswith("eval") else f"eval-{cfg.run.name}")
    with (
        stop_on_signals(),
        nats_url(cfg, work_dir) as url,
        run_grpc_tls(cfg, work_dir),
        Supervisor(RunDir(work_dir).logs, grace_s=grace_s) as sup,
    ):
        create_streams(url, run_id, timeout_s=cfg.nats.connect_timeout_s, ack_waits=cfg.ack_waits)
        for spec in sampling_specs(cfg):
            argv = service_argv(spec, url, run_id, config_path)
            if spec.name != "reward_model":  # it serves where the config says: the reward service calls it there
                argv += ["--grpc-port", "0"]
            sup.start(spec.name, argv, replica=spec.replica, env={**spec.env, **grpc_tls_env(cfg, work_dir, spec.name)})
        rollout, reward = wait_for_services(sup, cfg, url, run_id, timeout_s=start_timeout_s)
        yield EvalMesh(run_id, url, rollout, reward, grpc_user_env(secrets_dir(work_dir), "admin"))
