"""Run a whole mesh on this machine: NATS, every service as its own process, then the learner.

`run_local(cfg, run_dir)`:
  1. makes RUN_DIR (and RUN_DIR/logs), resolves free gRPC ports for the reference, the
     learner and a reward model it starts (so every process reads the same address from the
     config), and writes the resolved `RUN_DIR/config.yaml`;
  2. starts `EmbeddedNats(RUN_DIR/nats)` when `nats.url` is `embedded`, else uses `nats.url`;
  3. creates the run's JetStream streams once;
  4. starts environment × environment.replicas when the run's environment is a built-in with
     no address (config/environment.py; each replica on its own free port, announced in the
     run KV where the rollout finds it; a fresh bearer token per start: environment.py; an
     environment at an address must answer health first),
     rollout × rollout.replicas, reward_model × reward_model.replicas when a reward
     component has `kind: reward_model` and no address (config/reward_model.py; every
     replica on reward_model.grpc_port, which the reward service calls), and reward ×
     reward.replicas (not for offline algorithms such as DPO, which sample nothing), the
     reference × reference.replicas when
     `cfg.reference_enabled`, then the learner; each logs to RUN_DIR/logs/<name>-<i>.log;
  5. shows a progress bar from RUN_DIR/metrics.jsonl until the learner exits 0, restarting
     any service that dies meanwhile with back-off, within `launch.restart_budget` (the
     learner with `--resume RUN_DIR`: it continues from its newest good checkpoint); each
     restart is on the console, in RUN_DIR/restarts.jsonl, counted in the launcher's
     `meshrl_service_restarts_total` (meshrl.launch.restarts) and raised as an alert;
  6. meanwhile keeps as many environment / rollout / reward / reward_model / reference replicas as `meshrl
     scale RUN_DIR rollout=N ...` last asked for (scaler.py; RUN_DIR/launcher.json says a launcher runs);
  7. stops every process it started (also on Ctrl-C, SIGTERM or a service out of restarts),
     then removes the run's files in /dev/shm and every `psm_*` shared-memory segment its
     processes mapped (vLLM's 160 MiB queues survive a SIGKILL otherwise; see shm.py).

Environment per service: MESHRL_NATS_CREDENTIALS_FILE, the path of its kind's NATS credentials
with an embedded server (launch/nats.py); with launch.grpc_tls, MESHRL_GRPC_TLS_* naming its
kind's certificate in RUN_DIR/secrets (launch/secrets.py); otherwise a variable already set in our environment wins:
reward and environment get `OMP_NUM_THREADS=1` (rules and tools, not matmuls; environment also its
bearer token file, MESHRL_ENV_TOKEN_FILE); the learner and the reference get
glibc's huge-page tunable (meshrl/service/malloc.py: a step's tensors fault 2 MiB pages, not 4 KiB); rollout, reference and learner get the
cores `launch.cores` gives them (cores.py: all cores each by default, measured faster here
even when an asynchronous run overlaps them; or disjoint halves), vLLM always bound explicitly so that
its automatic binding does not leave a core idle. The KV cache is not set
here: the rollout engine passes rollout.kv_cache_gb to vLLM in bytes, so a fraction of a GiB
holds (vLLM's `VLLM_CPU_KVCACHE_SPACE` takes whole GiB only and, when set, wins).

The learner runs as one process, or with `learner.ranks: N` > 1 as `torchrun --standalone
--nproc-per-node N` (services/learner/ranks_run.py: torchrun keeping a rank's exit code 2); its
ranks share the learner's cores (OMP_NUM_THREADS divided by N) and get learner.stop_grace_s to
checkpoint on a stop.

Simplifications: replica i of the reference serves gRPC on reference.grpc_port + i.

Run: meshrl train examples/grpo_smollm2.yaml   (this is what it calls)
"""

from __future__ import annotations

import contextlib
import math
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
from meshrl.addresses import free_port
from meshrl.config.load import dump_config
from meshrl.config.reward_model import launches_reward_model
from meshrl.config.schema import RunConfig
from meshrl.service.malloc import huge_pages_env
from meshrl.launch.cores import CorePlan, plan_cores, usable_cores
from meshrl.launch.environment import (
    check_environment_up,
    launches_environment,
    name_token_file,
    run_environment_token,
    token_env,
)
from meshrl.errors import LaunchError
from meshrl.launch.secrets import grpc_tls_env, run_grpc_tls, service_credentials_env
from meshrl.launch.failed_start import cleared_if_nothing_trained
from meshrl.launch.restarts import Keeper, RestartPolicy, RestartReporter, close_restart_counter, open_restart_counter
from meshrl.launch.nats import create_streams, nats_url
from meshrl.run.presence import LauncherInfo, launcher_presence, write_presence
from meshrl.launch.progress import RunProgress, time_split
from meshrl.run.scale import SCALABLE
from meshrl.launch.scaler import Scaler
from meshrl.launch.shm import ShmTracker, reclaim
from meshrl.launch.supervisor import Supervisor, stop_on_signals
from meshrl.private_files import make_private_dir
from meshrl.run_layout import RunDir
from meshrl.security.run_key import ensure_run_keys, run_key_env

SHM_SCAN_S = 0.5  # how often the run's processes are checked for shared-memory segments


@dataclass
class ServiceSpec:
    name: str  # "rollout", "reward", "reference", "learner"
    replica: int
    env: dict[str, str] = field(default_factory=dict)
    launcher: list[str] = field(default_factory=lambda: [sys.executable])  # what runs `-m meshrl.services.<name>`


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    steps: int
    last_metrics: dict
    time_split: str = ""  # where a step's time went (progress.time_split)

    def summary(self) -> str:
        shown = ", ".join(
            f"{k}={self.last_metrics[k]:.4g}"
            for k in ("reward", "kl")
            if isinstance(self.last_metrics.get(k), (int, float))
        )
        done = f"run {self.run_id} done: {self.steps} steps{', ' + shown if shown else ''}; see {self.run_dir}"
        return done + (f"\n{self.time_split}" if self.time_split else "")


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
    sections = [cfg.reference, cfg.learner] + ([cfg.reward_model] if launches_reward_model(cfg) else [])
    for section in sections:
        if section.grpc_port == 0 or (resume and not port_is_free(section.grpc_port)):
            section.grpc_port = free_port()
    name_token_file(cfg, run_dir)  # the environment replicas pick free ports themselves and announce them
    return cfg


def check_run_dir(run_dir: Path, *, resume: bool) -> None:
    """A fresh run never writes into another run's checkpoints; a resume needs the run's
    config. A partial save (`step_N.tmp-PID`, a learner killed mid-save) blocks neither: a
    resume with no finished checkpoint starts at step 0 in the same run dir."""
    has_checkpoints = run_dir.is_dir() and bool(step_dirs(run_dir))
    if resume and not RunDir(run_dir).config.is_file():
        raise LaunchError(
            f"--resume {run_dir}: no config.yaml there; is it a run dir? (`meshrl checkpoints list {run_dir}`)"
        )
    if not resume and has_checkpoints:
        raise LaunchError(
            f"{run_dir} already holds checkpoints of a run; continue it with "
            f"`meshrl train --resume {run_dir}` or choose another run.dir"
        )


def prepare_run_dir(cfg: RunConfig, run_dir: Path, *, resume: bool = False) -> tuple[RunConfig, Path]:
    check_run_dir(run_dir, resume=resume)
    make_private_dir(run_dir)
    RunDir(run_dir).logs.mkdir(exist_ok=True)
    ensure_run_keys(run_dir)  # the learner signs weights notices with it (security/run_key.py)
    cfg = resolve_for_run(cfg, run_dir, resume=resume)
    config_path = RunDir(run_dir).config
    config_path.write_text(dump_config(cfg))
    return cfg, config_path


def _defaults(**env: str) -> dict[str, str]:
    """Env defaults that the user's own environment overrides."""
    return {k: v for k, v in env.items() if k not in os.environ}


COMMON_ENV = {"TOKENIZERS_PARALLELISM": "false"}


def core_plan(cfg: RunConfig) -> CorePlan:
    launch = cfg.launch
    return plan_cores(
        usable_cores(), mode=launch.cores, max_staleness=cfg.learner.max_staleness, rollout_cores=launch.rollout_cores
    )


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


def replica_spec(name: str, replica: int, cfg: RunConfig | None = None) -> ServiceSpec:
    """A replica of a scalable service; rollout replicas split the rollout cores between them
    (one more, started by `meshrl scale`, takes them as if it had been counted from the start)."""
    if name == "reward":
        return ServiceSpec(name, replica, _defaults(**COMMON_ENV, OMP_NUM_THREADS="1"))
    if name == "environment":  # tools and checks; its token is the run's (environment.py), never a default
        return ServiceSpec(name, replica, {**_defaults(**COMMON_ENV, OMP_NUM_THREADS="1"), **token_env(cfg)})
    if name == "reward_model":  # a forward pass per batch: torch's own threads (or the GPU)
        return ServiceSpec(name, replica, _defaults(**COMMON_ENV))
    plan = core_plan(cfg) if cfg is not None else plan_cores(usable_cores())
    if name == "rollout":
        replicas = max(replica + 1, cfg.rollout.replicas if cfg is not None else 1)
        tp = cfg.rollout.tensor_parallel_size if cfg is not None else 1
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
    env, ranks = core_plan(cfg).trainer_env(), cfg.learner.ranks
    if ranks == 1:
        return ServiceSpec("learner", 0, {**_defaults(**COMMON_ENV, **env), **huge_pages_env()})
    env["OMP_NUM_THREADS"] = str(max(1, int(env["OMP_NUM_THREADS"]) // ranks))
    torchrun = [
        sys.executable,
        "-m",
        "meshrl.services.learner.ranks_run",
        "--standalone",
        f"--nproc-per-node={ranks}",
        f"--shutdown-timeout={math.ceil(cfg.learner.stop_grace_s)}",
    ]  # rank 0's time to checkpoint
    return ServiceSpec("learner", 0, {**_defaults(**COMMON_ENV, **env), **huge_pages_env()}, launcher=torchrun)


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


def process_groups(sup: Supervisor) -> dict[str, int]:
    """child key -> its process group (every child leads its own)."""
    return {key: child.popen.pid for key, child in sup.children.items()}


def every(period_s: float, action: Callable[[], None]) -> Callable[[], None]:
    """`action`, run at most once per `period_s` however often the result is called."""
    last = [float("-inf")]

    def maybe() -> None:
        if time.monotonic() - last[0] >= period_s:
            last[0] = time.monotonic()
            action()

    return maybe


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


@contextlib.contextmanager
def freed_segments(tracker: ShmTracker):
    """After every process stopped: unlink the `psm_*` segments the run's processes mapped."""
    try:
        yield tracker
    finally:
        tracker.free()


@contextlib.contextmanager
def scanned_before_stop(shm: ShmTracker, sup: Supervisor):
    """However the block ends (a start that failed included): note the segments the run's live
    processes map before the supervisor stops them, so freed_segments frees them after."""
    try:
        yield
    finally:
        shm.scan(process_groups(sup))


def keep_running(
    cfg: RunConfig,
    sup: Supervisor,
    run_dir: Path,
    run_id: str,
    url: str,
    shm: ShmTracker,
    progress: bool,
    scale: Callable[[], None] = lambda: None,
) -> RunResult:
    """Restart dead services (the learner with --resume) until the learner exits 0, counting
    each restart on the launcher's /metrics endpoint (meshrl.launch.restarts)."""
    counter = open_restart_counter(cfg, run_id, url, started=sup.children)
    reporter = RestartReporter(cfg, run_dir, run_id, nats_url=url, counter=counter)
    keeper = Keeper(
        sup,
        RestartPolicy.from_config(cfg.launch),
        reporter,
        run_dir=run_dir,
        run_id=run_id,
        argv_for_restart=lambda key, argv: with_resume(argv, run_dir) if key == "learner-0" else argv,
        on_restarted=lambda key: shm.free([key], live=process_groups(sup)),
    )
    bar = RunProgress(RunDir(run_dir).metrics, cfg.learner.steps, desc=run_id, enabled=progress)
    scan = every(SHM_SCAN_S, lambda: shm.scan(process_groups(sup)))
    try:
        keeper.wait_for("learner-0", on_tick=lambda: (bar.update(), scan(), scale()))
    finally:
        shm.scan(process_groups(sup))  # what was made since the last scan, before the stop
        bar.close()
        reporter.close()
        close_restart_counter(counter, url, run_id, cfg.nats.connect_timeout_s)
    return RunResult(run_id, run_dir, bar.steps_done, bar.last, time_split(bar.rows))


@contextlib.contextmanager
def scaling(
    cfg: RunConfig,
    sup: Supervisor,
    run_dir: Path,
    run_id: str,
    url: str,
    argv_of: Callable[[str, int], list[str]],
    *,
    shm: ShmTracker,
    grace_s: float,
):
    """A Scaler over the replicas started so far, announced in RUN_DIR/launcher.json (which
    `meshrl scale` and `meshrl status` look for) for as long as the block runs."""
    counts = {name: len([k for k in sup.children if k.rsplit("-", 1)[0] == name]) for name in SCALABLE}
    info = LauncherInfo(
        os.getpid(), run_id, url, f"127.0.0.1:{cfg.learner.grpc_port}", {name: n for name, n in counts.items() if n}
    )

    def keep_counts(wanted: dict[str, int]) -> None:
        info.replicas = wanted
        write_presence(run_dir, info)

    scaler = Scaler(
        sup,
        run_dir,
        info.replicas,
        grace_s=grace_s,
        on_change=keep_counts,
        command_for=lambda name, i: (argv_of(name, i), service_env(cfg, run_dir, replica_spec(name, i, cfg))),
        on_left=lambda key: shm.free([key], live=process_groups(sup)),
    )
    with launcher_presence(run_dir, info):
        yield scaler


def run_local(
    cfg: RunConfig,
    run_dir: str | Path,
    *,
    run_id: str | None = None,
    progress: bool = True,
    grace_s: float = 15.0,
    resume: bool = False,
    argv_for: Callable[[ServiceSpec, str, str, Path], list[str]] = service_argv,
) -> RunResult:
    """Run the whole mesh here until the learner exits 0; stop everything; return the result.

    `argv_for(spec, nats_url, run_id, config_path)` makes each child's command line (tests
    swap in stand-ins for the real services).

    `resume=True` continues the run in RUN_DIR from its newest good checkpoint (a new run
    id: fresh streams; the checkpoint says which prompts were still in flight).

    A dead service is restarted per `cfg.launch` (see restarts.py). Raises LaunchError when
    NATS cannot be reached, ServiceGaveUp (a RunFailed) when a service will not be restarted.
    """
    run_dir = Path(run_dir)
    cfg, config_path = prepare_run_dir(cfg, run_dir, resume=resume)
    run_id = run_id or make_run_id(cfg.run.name)
    reclaim(RunDir(run_dir).shm_segments)  # what a killed launcher of this run could not free
    with (
        cleared_if_nothing_trained(run_dir, run_id, resume=resume),
        stop_on_signals(),
        nats_url(cfg, run_dir, run_id) as url,
        run_grpc_tls(cfg, run_dir),
        freed_shm(run_id),
        run_environment_token(cfg, run_dir),
        freed_segments(ShmTracker(record=RunDir(run_dir).shm_segments)) as shm,
        Supervisor(RunDir(run_dir).logs, grace_s=grace_s) as sup,
        scanned_before_stop(shm, sup),
    ):
        create_streams(
            url,
            run_id,
            timeout_s=cfg.nats.connect_timeout_s,
            replicas=cfg.nats.replicas,
            ack_waits=cfg.ack_waits,
        )
        check_environment_up(cfg)
        for spec in service_specs(cfg):
            argv = argv_for(spec, url, run_id, config_path)
            is_learner = spec.name == "learner"
            if is_learner and resume:
                argv = with_resume(argv, run_dir)
            sup.start(
                spec.name,
                argv,
                replica=spec.replica,
                env=service_env(cfg, run_dir, spec),
                stop_grace_s=cfg.learner.stop_grace_s if is_learner else None,
            )

        def replica_argv(name: str, replica: int) -> list[str]:  # what `meshrl scale` adds
            return argv_for(replica_spec(name, replica, cfg), url, run_id, config_path)

        with scaling(cfg, sup, run_dir, run_id, url, replica_argv, shm=shm, grace_s=grace_s) as scaler:
            return keep_running(cfg, sup, run_dir, run_id, url, shm, progress, scale=scaler.tick)
