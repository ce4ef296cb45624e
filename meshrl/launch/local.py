"""Run a whole mesh on this machine: NATS, every service as its own process, then the learner.

`run_local(cfg, run_dir)` runs these phases in order, each given what the earlier ones made:
  1. the run dir (run_dir.py): RUN_DIR and RUN_DIR/logs made, free gRPC ports resolved (every
     process reads the same address from the config), the resolved RUN_DIR/config.yaml written;
  2. the bus (nats.py): `EmbeddedNats(RUN_DIR/nats)` with a NATS user per service kind when
     `nats.url` is `embedded`, else `nats.url`; the run's JetStream streams created once;
  3. the run's secrets: gRPC certificates with launch.grpc_tls (secrets.py), the environment's
     token, and an environment at an address answering health first (environment.py);
  4. the processes (processes.py, specs.py): environment, rollout, reward_model and reward
     replicas (none for offline algorithms such as DPO, which sample nothing), the reference
     when `cfg.reference_enabled`, then the learner (with `--resume RUN_DIR` on a resume); each
     logs to RUN_DIR/logs/<name>-<i>.log;
  5. training (training.py): a progress bar until the learner exits 0, dead services
     restarted with back-off (restarts.py), replicas kept as `meshrl scale` asks (scaler.py);
  6. the stop, however the run ends (the learner's exit, Ctrl-C, SIGTERM, a service out of
     restarts): every process stopped, their shared memory freed (shm.py), the secrets and
     the embedded server gone; a start that trained nothing leaves a dir that starts again
     (failed_start.py).

Run: meshrl train examples/grpo_smollm2.yaml   (this is what it calls)
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from meshrl.config.schema import RunConfig
from meshrl.launch.environment import environment_ready
from meshrl.launch.failed_start import cleared_if_nothing_trained
from meshrl.launch.nats import run_bus
from meshrl.launch.processes import run_processes
from meshrl.launch.run_dir import prepare_run
from meshrl.launch.secrets import run_grpc_tls
from meshrl.launch.specs import ServiceCommands, ServiceSpec, service_argv, service_specs, start_services
from meshrl.launch.supervisor import stop_on_signals
from meshrl.launch.training import RunResult, keep_training


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

    `argv_for(spec, nats_url, run_id, config_path)` makes each child's command line (tests swap
    in stand-ins). `resume=True` continues the run in RUN_DIR from its newest good checkpoint
    (a new run id: fresh streams; the checkpoint says which prompts were still in flight).
    Raises LaunchError when NATS cannot be reached, ServiceGaveUp (a RunFailed) when a service
    will not be restarted, StopRequested on SIGTERM."""
    run = prepare_run(cfg, Path(run_dir), run_id=run_id, resume=resume)
    with (
        cleared_if_nothing_trained(run.dir, run.id, resume=resume),
        stop_on_signals(),
        run_bus(run.cfg, run.dir, run.id) as url,
        run_grpc_tls(run.cfg, run.dir),
        environment_ready(run.cfg, run.dir),
        run_processes(run.dir, run.id, grace_s=grace_s) as procs,
    ):
        commands = ServiceCommands(run, url, argv_for)
        start_services(procs.sup, service_specs(run.cfg), commands)
        return keep_training(procs, run, url, commands, progress=progress, grace_s=grace_s)
