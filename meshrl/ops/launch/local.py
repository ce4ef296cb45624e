"""Run a whole mesh on this machine: NATS, every service as its own process, then the learner.

`run_local(cfg, run_dir)`:
  1. makes RUN_DIR (and RUN_DIR/logs), resolves free gRPC ports for the reference and the
     learner (so every process reads the same address from the config), and writes the
     resolved `RUN_DIR/config.yaml`;
  2. starts `EmbeddedNats(RUN_DIR/nats)` when `nats.url` is `embedded`, else uses `nats.url`;
  3. creates the run's JetStream streams once;
  4. starts rollout × rollout.replicas and reward × reward.replicas (not for offline
     algorithms such as DPO, which sample nothing), the reference × reference.replicas when
     `cfg.reference_enabled`, then the learner; each logs to RUN_DIR/logs/<name>-<i>.log;
  5. shows a progress bar from RUN_DIR/metrics.jsonl until the learner exits;
  6. stops every process it started (also on Ctrl-C, SIGTERM or a dead service), then
     removes the run's files in /dev/shm.

Environment per service (a variable already set in our environment wins):
reward gets `OMP_NUM_THREADS=1` (rules, not matmuls); reference, rollout and learner get all cores
(on-policy runs alternate between them, so they seldom compete). The KV cache is not set
here: the rollout engine passes rollout.kv_cache_gb to vLLM in bytes, so a fraction of a GiB
holds (vLLM's `VLLM_CPU_KVCACHE_SPACE` takes whole GiB only and, when set, wins).

Simplifications: one learner process (torchrun ranks are the cluster's job); replica i of
the reference serves gRPC on reference.grpc_port + i.

Run: meshrl train examples/grpo_smollm2.yaml   (this is what it calls)
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from meshrl.inputs.checkpoint.layout import step_dirs
from meshrl.transport.bus.subjects import shm_prefix
from meshrl.transport.ports import free_port
from meshrl.config.load import dump_config
from meshrl.config.schema import RunConfig
from meshrl.ops.launch.errors import LaunchError, RunFailed
from meshrl.ops.launch.nats import create_streams, nats_url
from meshrl.ops.launch.progress import RunProgress
from meshrl.ops.launch.supervisor import ChildDied, Supervisor, stop_on_signals


@dataclass
class ServiceSpec:
    name: str  # "rollout", "reward", "reference", "learner"
    replica: int
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    steps: int
    last_metrics: dict

    def summary(self) -> str:
        shown = ", ".join(f"{k}={self.last_metrics[k]:.4g}" for k in ("reward", "kl")
                          if isinstance(self.last_metrics.get(k), (int, float)))
        return f"run {self.run_id} done: {self.steps} steps{', ' + shown if shown else ''}; see {self.run_dir}"


def make_run_id(name: str) -> str:
    """`<name>-<YYYYmmdd-HHMMSS>`, reduced to characters valid in a NATS subject token."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "run"
    return f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}"


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def resolve_for_run(cfg: RunConfig, run_dir: Path, *, resume: bool = False) -> RunConfig:
    """A copy with run.dir = RUN_DIR (absolute) and concrete gRPC ports where 0 meant 'any'.

    A resumed run reads the config its first start resolved; a port taken since then is
    replaced by a free one."""
    cfg = cfg.model_copy(deep=True)
    cfg.run.dir = str(run_dir.resolve())
    for section in (cfg.reference, cfg.learner):
        if section.grpc_port == 0 or (resume and not port_is_free(section.grpc_port)):
            section.grpc_port = free_port()
    return cfg


def check_run_dir(run_dir: Path, *, resume: bool) -> None:
    """A fresh run never writes into another run's checkpoints; a resume needs the run's
    config. A partial save (`step_N.tmp-PID`, a learner killed mid-save) blocks neither: a
    resume with no finished checkpoint starts at step 0 in the same run dir."""
    has_checkpoints = run_dir.is_dir() and bool(step_dirs(run_dir))
    if resume and not (run_dir / "config.yaml").is_file():
        raise LaunchError(f"--resume {run_dir}: no config.yaml there; is it a run dir? "
                          f"(`meshrl checkpoints list {run_dir}`)")
    if not resume and has_checkpoints:
        raise LaunchError(f"{run_dir} already holds checkpoints of a run; continue it with "
                          f"`meshrl train --resume {run_dir}` or choose another run.dir")


def prepare_run_dir(cfg: RunConfig, run_dir: Path, *, resume: bool = False) -> tuple[RunConfig, Path]:
    check_run_dir(run_dir, resume=resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "logs").mkdir(exist_ok=True)
    cfg = resolve_for_run(cfg, run_dir, resume=resume)
    config_path = run_dir / "config.yaml"
    config_path.write_text(dump_config(cfg))
    return cfg, config_path


def _defaults(**env: str) -> dict[str, str]:
    """Env defaults that the user's own environment overrides."""
    return {k: v for k, v in env.items() if k not in os.environ}


COMMON_ENV = {"TOKENIZERS_PARALLELISM": "false"}


def sampling_specs(cfg: RunConfig) -> list[ServiceSpec]:
    """The rollout and reward replicas (what sampling needs; `meshrl eval` starts only these)."""
    cores = str(os.cpu_count() or 1)
    specs = [ServiceSpec("rollout", i, _defaults(**COMMON_ENV, OMP_NUM_THREADS=cores))
             for i in range(cfg.rollout.replicas)]
    return specs + [ServiceSpec("reward", i, _defaults(**COMMON_ENV, OMP_NUM_THREADS="1"))
                    for i in range(cfg.reward.replicas)]


def service_specs(cfg: RunConfig) -> list[ServiceSpec]:
    """Every process of the run in start order, the learner last."""
    cores = str(os.cpu_count() or 1)
    common = COMMON_ENV
    specs = [] if cfg.algorithm.offline else sampling_specs(cfg)
    if cfg.reference_enabled:
        specs += [ServiceSpec("reference", i, _defaults(**common, OMP_NUM_THREADS=cores))
                  for i in range(cfg.reference.replicas)]
    specs.append(ServiceSpec("learner", 0, _defaults(**common, OMP_NUM_THREADS=cores)))
    return specs


def service_argv(spec: ServiceSpec, url: str, run_id: str, config_path: Path) -> list[str]:
    """The process contract every service follows."""
    return [sys.executable, "-m", f"meshrl.services.{spec.name}", "--nats", url,
            "--run-id", run_id, "--config", str(config_path),
            "--replica-id", f"{spec.name}-{spec.replica}"]


def _learner_failed(sup: Supervisor, key: str, rc: int) -> RunFailed:
    return RunFailed(f"{key} exited with code {rc}; last lines of "
                     f"{sup.children[key].log_path}:\n{sup.log_tail(key)}")


@contextlib.contextmanager
def freed_shm(run_id: str, root: Path = Path("/dev/shm")):
    """After every process stopped: remove what the run left in /dev/shm (tmpfs pages are
    memory). The learner removes its own files on exit; this covers one that was killed."""
    try:
        yield
    finally:
        for path in root.glob(f"{shm_prefix(run_id)}*"):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def run_local(cfg: RunConfig, run_dir: str | Path, *, run_id: str | None = None,
              progress: bool = True, grace_s: float = 15.0, resume: bool = False,
              argv_for: Callable[[ServiceSpec, str, str, Path], list[str]] = service_argv) -> RunResult:
    """Run the whole mesh here until the learner exits; stop everything; return the result.

    `argv_for(spec, nats_url, run_id, config_path)` makes each child's command line (tests
    swap in stand-ins for the real services).

    `resume=True` continues the run in RUN_DIR from its newest good checkpoint (a new run
    id: fresh streams; the checkpoint says which prompts were still in flight).

    Raises LaunchError when NATS cannot be reached, RunFailed when a service dies or the
    learner exits non-zero.
    """
    run_dir = Path(run_dir)
    cfg, config_path = prepare_run_dir(cfg, run_dir, resume=resume)
    run_id = run_id or make_run_id(cfg.run.name)
    with stop_on_signals(), nats_url(cfg, run_dir) as url, freed_shm(run_id), \
            Supervisor(run_dir / "logs", grace_s=grace_s) as sup:
        create_streams(url, run_id, timeout_s=cfg.nats.connect_timeout_s)
        for spec in service_specs(cfg):
            argv = argv_for(spec, url, run_id, config_path)
            is_learner = spec.name == "learner"
            if is_learner and resume:
                argv = [*argv, "--resume", str(run_dir.resolve())]
            sup.start(spec.name, argv, replica=spec.replica, env=spec.env,
                      stop_grace_s=cfg.learner.stop_grace_s if is_learner else None)
        bar = RunProgress(run_dir / "metrics.jsonl", cfg.learner.steps, desc=run_id, enabled=progress)
        try:
            rc = sup.wait_for("learner-0", on_tick=bar.update)
        except ChildDied as err:
            raise RunFailed(str(err)) from None
        finally:
            bar.close()
        if rc != 0:
            raise _learner_failed(sup, "learner-0", rc)
        return RunResult(run_id, run_dir, bar.steps_done, bar.last)
