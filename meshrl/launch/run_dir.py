"""A local run's first phase: the run dir made ready before anything starts.

    run = prepare_run(cfg, Path("runs/x"))    # LocalRun: the resolved config, its file, the run id

It checks that a fresh start's RUN_DIR holds no other run, makes RUN_DIR (owner only) and
RUN_DIR/logs, the run's signing keys, resolves free gRPC ports for the reference, the learner
and a reward model the launcher starts (so every process reads the same address from the
config), names the run's environment token file, and writes the resolved RUN_DIR/config.yaml. A fresh run never writes into another run's checkpoints; a
resume needs the run's config.
"""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from meshrl.addresses import free_port
from meshrl.config.load import dump_config
from meshrl.config.reward_model import launches_reward_model
from meshrl.config.schema import RunConfig
from meshrl.errors import LaunchError
from meshrl.inputs.checkpoint.layout import step_dirs
from meshrl.launch.environment import name_token_file
from meshrl.private_files import keep_new_files_private, make_private_dir
from meshrl.run_layout import RUN_MARKS, RunDir
from meshrl.security.run_key import ensure_run_keys


@dataclass(frozen=True)
class LocalRun:
    """What the later phases are given: the resolved config and where the run lives."""

    cfg: RunConfig  # run.dir absolute, every gRPC port concrete
    dir: Path
    id: str
    config_path: Path
    resume: bool


def prepare_run(cfg: RunConfig, run_dir: Path, *, run_id: str | None = None, resume: bool = False) -> LocalRun:
    run_id = run_id or make_run_id(cfg.run.name)
    cfg, config_path = prepare_run_dir(cfg, run_dir, resume=resume)
    return LocalRun(cfg, run_dir, run_id, config_path, resume)


def prepare_run_dir(cfg: RunConfig, run_dir: Path, *, resume: bool = False) -> tuple[RunConfig, Path]:
    """The checked and made RUN_DIR; (the resolved config, the path it was written to)."""
    check_run_dir(run_dir, resume=resume)
    layout = RunDir(run_dir)
    keep_new_files_private()  # the launcher's files and every service it starts
    make_private_dir(run_dir)
    layout.logs.mkdir(exist_ok=True)
    ensure_run_keys(run_dir)  # the learner signs weights notices with it (security/run_key.py)
    cfg = resolve_for_run(cfg, run_dir, resume=resume)
    layout.config.write_text(dump_config(cfg))
    return cfg, layout.config


def check_run_dir(run_dir: Path, *, resume: bool) -> None:
    """A resume needs its run's config; a fresh start never appends to another run's metrics,
    ledger or checkpoints (finished or failed). A partial save (`step_N.tmp-PID`, a learner
    killed mid-save) blocks neither: a resume with no finished checkpoint starts at step 0."""
    if resume and not RunDir(run_dir).config.is_file():
        raise LaunchError(
            f"--resume {run_dir}: no config.yaml there; is it a run dir? (`meshrl checkpoints list {run_dir}`)"
        )
    if resume or not run_dir.is_dir():
        return
    found = [name for name in RUN_MARKS if (run_dir / name).exists()] + (["checkpoints"] if step_dirs(run_dir) else [])
    if found:
        raise LaunchError(
            f"run dir {run_dir} already holds a run ({', '.join(found)}); continue it with "
            f"`meshrl train --resume {run_dir}`, or start a new one with run.dir=NEW_DIR "
            f"(or --run-dir NEW_DIR)"
        )


def resolve_for_run(cfg: RunConfig, run_dir: Path, *, resume: bool = False) -> RunConfig:
    """A copy with run.dir = RUN_DIR (absolute) and concrete gRPC ports where 0 meant 'any'.

    A resumed run reads the config its first start resolved; a port taken since then is
    replaced by a free one."""
    cfg = cfg.model_copy(deep=True)
    cfg.run.dir = str(run_dir.resolve())
    sections = [cfg.reference, cfg.learner] + ([cfg.reward_model] if launches_reward_model(cfg) else [])
    for section in sections:
        if section.grpc_port == 0 or (resume and not port_is_free(section.grpc_port)):
            section.grpc_port = free_port()
    name_token_file(cfg, run_dir)  # the environment replicas pick free ports themselves and announce them
    return cfg


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def make_run_id(name: str) -> str:
    """`<name>-<YYYYmmdd-HHMMSS>`, reduced to characters valid in a NATS subject token."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "run"
    return f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}"
