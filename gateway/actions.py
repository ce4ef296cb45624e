"""What the gateway does to a run. Each returns a RunActionResponse; the API checks the role
(api/dispatch.py) and writes the audit row (api/handlers.py, through meshrl.run.audit, the
file `meshrl scale` writes).
`meshrl pause|resume|checkpoint|stop RUN_DIR` (meshrl/cli/control.py) uses the first four
on a local run, and audits them itself.

    pause / resume / checkpoint   LearnerControlService on the learner's control address
    stop                          SIGTERM to the launcher (it stops every process it started)
    scale                         RUN_DIR/scale.json, as `meshrl scale` (the launcher applies it)
    submit                        `meshrl train CONFIG overrides run.dir=ROOT/NAME` as a subprocess
    rollback                      meshrl.inputs.checkpoint.retention.rollback, on a stopped run
    export                        meshrl.inputs.checkpoint.export.export_hf into RUN_DIR/exports/
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc

from meshrl.api.gateway.v1 import gateway_pb2
from meshrl.config import load_config
from meshrl.config.values import MAX_REPLICAS
from meshrl.errors import ConfigError
from meshrl.gateway.auth.tenant import TenantPolicy
from meshrl.gateway.errors import GatewayError, invalid, precondition
from meshrl.gateway.runs.status import learner_message
from meshrl.private_files import private_open_append, write_private_file
from meshrl.run.audit import ON_BEHALF_OF
from meshrl.run.presence import LauncherInfo, holds_launch_lock

CONTROL_TIMEOUT_S = 120.0  # Checkpoint answers after the current step and the write


async def learner_call(info: LauncherInfo, verb: str, reason: str = "", who: str = ""):
    from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
    from meshrl.transport.rpc.channel import open_channel

    requests = {
        "Pause": learner_pb2.PauseRequest(reason=reason),
        "Resume": learner_pb2.ResumeRequest(),
        "Checkpoint": learner_pb2.CheckpointRequest(tag=reason),
    }
    async with open_channel(info.learner_grpc, retries=False) as channel:
        stub = learner_pb2_grpc.LearnerControlServiceStub(channel)
        try:
            # the learner audits the call too, naming our user beside our certificate
            return await getattr(stub, verb)(
                requests[verb], timeout=CONTROL_TIMEOUT_S, metadata=((ON_BEHALF_OF, who),) if who else None
            )
        except grpc.aio.AioRpcError as err:
            raise GatewayError(
                grpc.StatusCode.UNAVAILABLE,
                f"the learner at {info.learner_grpc} did not {verb.lower()}: {err.code().name} {err.details()}",
            ) from None


def status_dict(status) -> dict:
    from meshrl.api.common.v1 import common_pb2

    return {
        "grpc": "",
        "state": common_pb2.RunState.Name(status.state).removeprefix("RUN_STATE_"),
        "step": status.step,
        "total_steps": status.total_steps,
        "policy_version": status.policy_version,
        "groups_trained": status.groups_trained,
        "groups_in_flight": status.groups_in_flight,
        "message": status.message,
    }


async def pause_or_resume(info: LauncherInfo, verb: str, reason: str, who: str = "") -> gateway_pb2.RunActionResponse:
    reply = await learner_call(info, verb, reason, who)
    learner = learner_message({**status_dict(reply.status), "grpc": info.learner_grpc})
    return gateway_pb2.RunActionResponse(
        message=f"learner {learner.state.lower()} at step {learner.step}", learner=learner
    )


async def checkpoint(info: LauncherInfo, tag: str, who: str = "") -> gateway_pb2.RunActionResponse:
    """`tag` (the request's reason) names the checkpoint: it must be a tag, not free text."""
    from meshrl.inputs.checkpoint.errors import CheckpointError
    from meshrl.inputs.checkpoint.tags import check_tag

    try:
        check_tag(tag) if tag else None
    except CheckpointError as err:
        raise invalid(f"reason: {err} (a checkpoint's reason becomes its tag)") from None
    reply = await learner_call(info, "Checkpoint", tag, who)
    return gateway_pb2.RunActionResponse(
        message=f"checkpoint of step {reply.step} written to {reply.path}", checkpoint_step=reply.step, path=reply.path
    )


def stop(info: LauncherInfo, run_dir: Path) -> gateway_pb2.RunActionResponse:
    """SIGTERM to the run's launcher: the pid launcher.json names, once the kernel confirms it
    holds this run's launch lock (that file is the run's to rewrite: meshrl/run/presence.py)."""
    if not holds_launch_lock(info.pid, run_dir):
        raise precondition(
            f"launcher.json of {run_dir.name} names pid {info.pid}, which does not hold the run's "
            "launch lock: not this run's launcher; nothing was signalled"
        )
    os.kill(info.pid, signal.SIGTERM)
    return gateway_pb2.RunActionResponse(message=f"asked the launcher (pid {info.pid}) to stop the run")


def scale(info: LauncherInfo, run_dir: Path, service: str, replicas: int) -> tuple[gateway_pb2.RunActionResponse, dict]:
    from meshrl.run.scale import write_request

    if service not in info.replicas:
        raise invalid(
            f"the run has no scalable {service!r} service; it runs "
            f"{', '.join(f'{k} ×{v}' for k, v in info.replicas.items()) or 'only the learner'}"
        )
    if replicas < 1:
        raise invalid(f"replicas must be at least 1 (asked {replicas}); stop the run with StopRun instead")
    if replicas > MAX_REPLICAS:
        raise invalid(
            f"replicas={replicas}: allowed 1..{MAX_REPLICAS} replicas of one service "
            "(meshrl.config.values, the same cap as `meshrl scale` and the run config)"
        )
    write_request(run_dir, {service: replicas})
    changes = {service: {"from": info.replicas[service], "to": replicas}}
    return gateway_pb2.RunActionResponse(
        message=f"asked the launcher: {service} ×{info.replicas[service]} → ×{replicas}"
    ), changes


def submit(root: Path, name: str, config_yaml: str, overrides: list[str], tenants: TenantPolicy) -> int:
    """Write ROOT/.submitted/NAME.yaml and start `meshrl train` on it as a tenant (auth/tenant.py:
    checked against the policy first, a clean environment, the runs root as its working
    directory); the launcher's pid."""
    run_dir = root / name
    if run_dir.exists():
        raise GatewayError(grpc.StatusCode.ALREADY_EXISTS, f"{run_dir} exists; pick another name")
    overrides = [*overrides, f"run.dir={run_dir}"]
    folder = root / ".submitted"  # configs and logs of other people's runs: the gateway's user's alone
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(0o700)
    config = write_private_file(folder / f"{name}.yaml", config_yaml.encode())
    checked_config(config, overrides, root, tenants)
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshrl.cli.main", "train", str(config), *overrides],
        stdout=private_open_append(folder / f"{name}.log"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=root,
        env=tenants.child_env(os.environ),
    )
    return proc.pid


def checked_config(config: Path, overrides: list[str], root: Path, tenants: TenantPolicy) -> None:
    """Load the submitted config and hold it to the tenant policy, so it fails here, not in the
    child; a config refused is deleted."""
    try:  # parts named by import path are refused before any lookup
        cfg = load_config(config, overrides=overrides, roots=[config.parent], check_tree=tenants.check_tree)
        tenants.check(cfg, base=root)
    except ConfigError as err:
        config.unlink()
        raise invalid(f"the config does not load: {err}") from None
    except GatewayError:
        config.unlink()
        raise


def rollback(run_dir: Path, live: bool, to_step: int) -> gateway_pb2.RunActionResponse:
    from meshrl.inputs.checkpoint.errors import CheckpointError
    from meshrl.inputs.checkpoint.retention import rollback as do_rollback

    if live:
        raise precondition(
            "roll back a stopped run only: stop it first (StopRun), then resume it from "
            "the rolled-back checkpoint with `meshrl train --resume`"
        )
    try:
        path = do_rollback(run_dir, to_step)
    except CheckpointError as err:
        raise invalid(str(err)) from None
    return gateway_pb2.RunActionResponse(message=f"current checkpoint is now {path.name}", checkpoint_step=to_step)


def export(run_dir: Path, step: int | None) -> gateway_pb2.RunActionResponse:
    """Blocking (seconds to minutes for a big model): handlers run it in a thread."""
    from meshrl.inputs.checkpoint.errors import CheckpointError
    from meshrl.inputs.checkpoint.export import export_hf
    from meshrl.inputs.checkpoint.layout import find_step
    from meshrl.inputs.checkpoint.scan import latest_good_checkpoint

    try:
        ckpt = find_step(run_dir, step) if step is not None else latest_good_checkpoint(run_dir)
        out = export_hf(ckpt, run_dir / "exports" / ckpt.name)
    except CheckpointError as err:
        raise invalid(str(err)) from None
    except OSError as err:  # the run's exports/ is not a folder the gateway can write (a dangling link)
        raise invalid(
            f"cannot write the export under {run_dir.name}/exports: {err.strerror or type(err).__name__}"
        ) from None
    return gateway_pb2.RunActionResponse(
        message=f"exported {ckpt.name} to {out}", path=str(out), checkpoint_step=int(ckpt.name.removeprefix("step_"))
    )
