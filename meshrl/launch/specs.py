"""What each process of a local run is: its service, replica, environment and command line.

    commands = ServiceCommands(run, nats_url)        # run: run_dir.LocalRun
    start_services(sup, service_specs(run.cfg), commands)   # every process in order, the learner last
    argv, env = commands.of_replica("rollout", 2)    # what `meshrl scale rollout=3` adds

Environment per service: MESHRL_NATS_CREDENTIALS_FILE, the path of its kind's NATS credentials
with an embedded server (launch/nats.py); with launch.grpc_tls, MESHRL_GRPC_TLS_* naming its
kind's certificate in RUN_DIR/secrets (launch/secrets.py); otherwise a variable already set in
our environment wins: reward and environment get `OMP_NUM_THREADS=1` (rules and tools, not
matmuls; environment also its bearer token file, MESHRL_ENV_TOKEN_FILE); the learner and the
reference get glibc's huge-page tunable (meshrl/service/malloc.py: a step's tensors fault 2 MiB
pages, not 4 KiB); rollout, reference and learner get the cores `launch.cores` gives them
(cores.py), vLLM always bound explicitly so that its automatic binding does not leave a core
idle. The KV cache is not set here: the rollout engine passes rollout.kv_cache_gb to vLLM in
bytes, so a fraction of a GiB holds (vLLM's `VLLM_CPU_KVCACHE_SPACE` takes whole GiB only and,
when set, wins).

The learner runs as one process, or with `learner.ranks: N` > 1 as `torchrun --standalone
--nproc-per-node N` (services/learner/ranks_run.py: torchrun keeping a rank's exit code 2); its
ranks share the learner's cores (OMP_NUM_THREADS divided by N). The learner is stopped first
and given learner.stop_grace_s to checkpoint (`ServiceSpec.stop_grace_s`).

Simplification: replica i of the reference serves gRPC on reference.grpc_port + i.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from meshrl.config.reward_model import launches_reward_model
from meshrl.config.schema import RunConfig
from meshrl.launch.cores import CorePlan, plan_cores, usable_cores
from meshrl.launch.environment import launches_environment, token_env
from meshrl.launch.run_dir import LocalRun
from meshrl.launch.secrets import grpc_tls_env, service_credentials_env
from meshrl.launch.supervisor import Supervisor
from meshrl.security.run_key import run_key_env
from meshrl.service.malloc import huge_pages_env

COMMON_ENV = {"TOKENIZERS_PARALLELISM": "false"}
Command = tuple[list[str], dict[str, str]]


@dataclass
class ServiceSpec:
    name: str  # a service kind of meshrl/topology.py
    replica: int
    env: dict[str, str] = field(default_factory=dict)
    launcher: list[str] = field(default_factory=lambda: [sys.executable])  # what runs `-m meshrl.services.<name>`
    stop_grace_s: float | None = None  # stopped first, alone, given this long (the learner's checkpoint)


def _defaults(**env: str) -> dict[str, str]:
    """Env defaults that the user's own environment overrides."""
    return {k: v for k, v in env.items() if k not in os.environ}


def core_plan(cfg: RunConfig) -> CorePlan:
    return plan_cores(usable_cores(), mode=cfg.launch.cores, max_staleness=cfg.learner.max_staleness)


def sampling_specs(cfg: RunConfig) -> list[ServiceSpec]:
    """The rollout and reward replicas (what sampling needs; `meshrl eval` starts only these),
    the environment's before the rollout's when the run launches a built-in environment, and the
    reward model's before the reward's when the run has a `kind: reward_model` component."""
    specs = (
        [replica_spec("environment", i, cfg) for i in range(cfg.environment.replicas)]
        if launches_environment(cfg)
        else []
    )
    specs += [replica_spec("rollout", i, cfg) for i in range(cfg.rollout.replicas)]
    if launches_reward_model(cfg):
        specs += [replica_spec("reward_model", i, cfg) for i in range(cfg.reward_model.replicas)]
    return specs + [replica_spec("reward", i, cfg) for i in range(cfg.reward.replicas)]


def replica_spec(name: str, replica: int, cfg: RunConfig) -> ServiceSpec:
    """A replica of a scalable service; rollout replicas split the rollout cores between them
    (one more, started by `meshrl scale`, takes them as if it had been counted from the start)."""
    if name == "reward":
        return ServiceSpec(name, replica, _defaults(**COMMON_ENV, OMP_NUM_THREADS="1"))
    if name == "environment":  # tools and checks; its token is the run's (environment.py), never a default
        return ServiceSpec(name, replica, {**_defaults(**COMMON_ENV, OMP_NUM_THREADS="1"), **token_env(cfg)})
    if name == "reward_model":  # a forward pass per batch: torch's own threads (or the GPU)
        return ServiceSpec(name, replica, _defaults(**COMMON_ENV))
    plan = core_plan(cfg)
    if name == "rollout":
        replicas, tp = max(replica + 1, cfg.rollout.replicas), cfg.rollout.tensor_parallel_size
        return ServiceSpec(name, replica, _defaults(**COMMON_ENV, **plan.rollout_env(replica, replicas, tp)))
    return ServiceSpec(name, replica, {**_defaults(**COMMON_ENV, **plan.trainer_env()), **huge_pages_env()})


def service_specs(cfg: RunConfig) -> list[ServiceSpec]:
    """Every process of the run in start order, the learner last."""
    specs = [] if cfg.algorithm.offline else sampling_specs(cfg)
    if cfg.reference_enabled:
        specs += [replica_spec("reference", i, cfg) for i in range(cfg.reference.replicas)]
    specs.append(learner_spec(cfg))
    return specs


def learner_spec(cfg: RunConfig) -> ServiceSpec:
    """The learner: one process, or torchrun's `learner.ranks` ranks sharing the learner's cores."""
    env, ranks, grace_s = core_plan(cfg).trainer_env(), cfg.learner.ranks, cfg.learner.stop_grace_s
    if ranks == 1:
        return ServiceSpec("learner", 0, {**_defaults(**COMMON_ENV, **env), **huge_pages_env()}, stop_grace_s=grace_s)
    env["OMP_NUM_THREADS"] = str(max(1, int(env["OMP_NUM_THREADS"]) // ranks))
    torchrun = [
        sys.executable,
        "-m",
        "meshrl.services.learner.ranks_run",
        "--standalone",
        f"--nproc-per-node={ranks}",
        f"--shutdown-timeout={math.ceil(grace_s)}",  # rank 0's time to checkpoint
    ]
    env = {**_defaults(**COMMON_ENV, **env), **huge_pages_env()}
    return ServiceSpec("learner", 0, env, launcher=torchrun, stop_grace_s=grace_s)


def service_argv(spec: ServiceSpec, url: str, run_id: str, config_path: Path) -> list[str]:
    """The process contract every service follows."""
    return [
        *spec.launcher,
        "-m",
        f"meshrl.services.{spec.name}",
        "--nats",
        url,
        "--run-id",
        run_id,
        "--config",
        str(config_path),
        "--replica-id",
        f"{spec.name}-{spec.replica}",
    ]


def with_resume(argv: list[str], run_dir: Path) -> list[str]:
    """The learner's command line, resuming from RUN_DIR's newest good checkpoint (a run dir
    with none yet starts at step 0)."""
    return argv if "--resume" in argv else [*argv, "--resume", str(run_dir.resolve())]


def service_env(cfg: RunConfig, run_dir: Path, spec: ServiceSpec) -> dict[str, str]:
    """The spec's environment plus its kind's NATS credential file (a path, never the password),
    with launch.grpc_tls its kind's gRPC TLS files (meshrl.launch.secrets), and the run's key
    files (the signing key to the learner only: security/run_key.py)."""
    return {
        **spec.env,
        **service_credentials_env(cfg, run_dir, spec.name),
        **grpc_tls_env(cfg, run_dir, spec.name),
        **run_key_env(run_dir, spec.name),
    }


@dataclass(frozen=True)
class ServiceCommands:
    """Each process's command line and environment in one run: the same for the first start
    and for a replica `meshrl scale` adds; a resumed run's learner resumes. `argv_for` swaps in
    stand-ins in tests."""

    run: LocalRun
    url: str
    argv_for: Callable[[ServiceSpec, str, str, Path], list[str]] = service_argv

    def of(self, spec: ServiceSpec) -> Command:
        argv = self.argv_for(spec, self.url, self.run.id, self.run.config_path)
        if spec.name == "learner" and self.run.resume:
            argv = with_resume(argv, self.run.dir)
        return argv, service_env(self.run.cfg, self.run.dir, spec)

    def of_replica(self, name: str, replica: int) -> Command:
        return self.of(replica_spec(name, replica, self.run.cfg))


def start_services(sup: Supervisor, specs: list[ServiceSpec], commands: ServiceCommands) -> None:
    """Start every process in the order given (the learner last: it waits for nobody)."""
    for spec in specs:
        argv, env = commands.of(spec)
        sup.start(spec.name, argv, replica=spec.replica, env=env, stop_grace_s=spec.stop_grace_s)
