"""The learner service on 2 torchrun ranks (FSDP2, gloo) against a real NATS server, then resumed.

The rollout side is `seeded_rollout` (fakes.py), a FAKE named as such: samples are a
function of each task's seed, so runs are comparable step by step (as in test_resume.py).
- straight: one learner process (in this test process) trains steps 0-3;
- ranks: the learner service started with the launcher's command line for
  `learner.ranks: 2` (torchrun, two processes) trains steps 0-1, checkpoints step_2 at the
  end of its run and writes its final policy;
- resumed: one learner process continues that run dir from step_2 (another world size:
  the checkpoint's DCP shards are resharded on load) and trains steps 2-3.
The losses and gradient norms of every step match the straight run (1e-5): the two ranks
trained the same batches as one process, and the AdamW state saved by two ranks carried
over. (The same equality on one batch at the core's level: tests/unit/services/learner/train/test_fsdp.py.)
The learning rate is constant, so a 2-step run and a 4-step run share their schedule.
Then the stop (preemption): SIGTERM to torchrun mid-run leaves a two-rank checkpoint of the
last step trained.
"""

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from meshrl.config.load import dump_config
from meshrl.inputs.checkpoint import list_checkpoints
from meshrl.inputs.checkpoint.manifest import read_manifest
from meshrl.launch.specs import learner_spec, service_argv
from meshrl.transport.bus import Bus
from tests.services.learner.fakes import make_config, run_once, seeded_rollout

pytestmark = pytest.mark.slow
COMPARED = ("loss", "grad_norm", "pg_loss", "reward")
# constant LR: a 2-step and a 4-step run share their schedule; micro-batches of one group: a
# rank and one process run the same forwards; fp32: `precision: auto` may pick bf16 autocast here
SAME_WORK = {
    "trainer.optim.warmup_steps": 0,
    "trainer.optim.min_lr_ratio": 1.0,
    "trainer.micro_batch_size": 4,
    "trainer.precision": "fp32",
}


def metrics_rows(run_dir) -> dict[int, dict]:
    return {r["step"]: r for r in map(json.loads, (Path(run_dir) / "metrics.jsonl").read_text().splitlines())}


async def serve_on_two_ranks(cfg, nats_url: str, run_id: str, sigterm_after: int | None = None) -> tuple[int, str]:
    """The launcher's learner command (torchrun, 2 ranks) until it exits; (exit code, its log).
    `sigterm_after`: SIGTERM to torchrun (what the launcher's stop sends) once that many steps are logged."""
    config_path = Path(cfg.run.dir) / "config.yaml"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(dump_config(cfg))
    spec = learner_spec(cfg)
    log_path = Path(cfg.run.dir) / "learner.log"
    bus = await Bus.connect(nats_url, run_id, name="test")
    await bus.ensure_streams()
    rollout = asyncio.create_task(seeded_rollout(bus))
    try:
        with log_path.open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                *service_argv(spec, nats_url, run_id, config_path),
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **spec.env},
            )
            try:
                if sigterm_after is not None:
                    await asyncio.wait_for(steps_logged(cfg.run.dir, sigterm_after), timeout=240)
                    proc.send_signal(signal.SIGTERM)
                code = await asyncio.wait_for(proc.wait(), timeout=240)
            except asyncio.TimeoutError:
                proc.kill()
                code = await proc.wait()
    finally:
        rollout.cancel()
        await asyncio.gather(rollout, return_exceptions=True)
        await bus.close()
    return code, log_path.read_text(errors="replace")


async def steps_logged(run_dir, n: int) -> None:
    metrics = Path(run_dir) / "metrics.jsonl"
    while not (metrics.is_file() and len(metrics.read_text().splitlines()) >= n):
        await asyncio.sleep(0.1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir, nats_url):
    tmp = tmp_path_factory.mktemp("ranks")
    two = make_config(tmp, tiny_model_dir, "ranks", **SAME_WORK, **{"learner.ranks": 2, "learner.steps": 2})
    code, log = asyncio.run(serve_on_two_ranks(two, nats_url, "tranks2"))
    resumed_cfg = make_config(tmp, tiny_model_dir, "ranks", **SAME_WORK)
    resumed, _ = asyncio.run(run_once(resumed_cfg, nats_url, resume=resumed_cfg.run.dir))
    straight = make_config(tmp, tiny_model_dir, "straight", **SAME_WORK)
    asyncio.run(run_once(straight, nats_url))
    return {"code": code, "log": log, "two": two, "resumed": resumed, "straight": straight}


def test_the_launcher_starts_two_ranks_with_torchrun(runs):
    spec = learner_spec(runs["two"])
    assert spec.launcher[1:5] == ["-m", "meshrl.services.learner.ranks_run", "--standalone", "--nproc-per-node=2"]
    assert runs["code"] == 0, runs["log"][-4000:]
    assert "rank 1 of 2 joined" in runs["log"]


def test_two_ranks_checkpoint_and_write_the_final_policy(runs):
    run_dir = Path(runs["two"].run.dir)
    step_2 = run_dir / "checkpoints" / "step_2"
    manifest = read_manifest(step_2)
    assert manifest["world_size"] == 2 and manifest["step"] == 2
    rng = {f"rng/rank_{r}.safetensors" for r in (0, 1)}  # one RNG state per rank, the model whole
    assert rng | {"model/policy.safetensors", "optim/policy.safetensors"} <= set(manifest["files"])
    assert json.loads((step_2 / "state.json").read_text())["step"] == 2
    assert (run_dir / "final" / "model.safetensors").is_file()


def test_one_process_resumes_the_two_rank_checkpoint(runs):
    assert runs["resumed"].step == 4 and len(set(runs["resumed"].trained_ids)) == 8
    steps = [c.step for c in list_checkpoints(runs["two"].run.dir) if c.status == "ok"]
    assert steps[-2:] == [2, 4]


def test_every_step_matches_one_process(runs):
    """Steps 0-1 on two ranks, 2-3 resumed on one process: the straight run's numbers."""
    got, want = metrics_rows(runs["two"].run.dir), metrics_rows(runs["straight"].run.dir)
    assert sorted(got) == sorted(want) == [0, 1, 2, 3]
    for step in range(4):
        for key in COMPARED:
            assert got[step][key] == pytest.approx(want[step][key], rel=1e-5, abs=1e-6), (step, key)


def test_sigterm_stops_both_ranks_after_a_checkpoint(tmp_path, tiny_model_dir, nats_url):
    """Preemption on 2 ranks: torchrun passes SIGTERM to both; rank 0 finishes its step,
    checkpoints with rank 1 (which ignores the signal and follows), then releases it."""
    cfg = make_config(
        tmp_path,
        tiny_model_dir,
        "stopped",
        **SAME_WORK,
        **{"learner.ranks": 2, "learner.steps": 1000, "learner.checkpoint_every": 0},
    )
    _, log = asyncio.run(serve_on_two_ranks(cfg, nats_url, "tranks-stop", sigterm_after=2))
    done = len(metrics_rows(cfg.run.dir))
    assert done >= 2 and f"checkpoint at step {done} (stopped)" in log, log[-4000:]
    newest = [c for c in list_checkpoints(cfg.run.dir) if c.status == "ok"][-1]
    assert newest.step == done and read_manifest(newest.path)["world_size"] == 2
