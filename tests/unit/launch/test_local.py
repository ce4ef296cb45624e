"""The local launcher's pieces: run dir + resolved config, which services start with which
environment and arguments, the progress bar fed by metrics.jsonl, and the /dev/shm cleanup."""

import io
import json
import sys

import pytest

from meshrl.config.load import load_config
from meshrl.launch.progress import MetricsTail, RunProgress, postfix
from meshrl.launch.run_dir import make_run_id, prepare_run, prepare_run_dir
from meshrl.launch.shm import freed_shm
from meshrl.launch.specs import ServiceCommands, service_argv, service_specs
from meshrl.launch.training import RunResult

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def cfg_with(**sections):
    return load_config(base={**BASE, **sections})


def test_run_dir_holds_the_resolved_config_with_concrete_ports(tmp_path):
    cfg = cfg_with(algorithm={"preset": "grpo"}, learner={"steps": 7})
    resolved, path = prepare_run_dir(cfg, tmp_path / "run")
    assert path == tmp_path / "run" / "config.yaml" and (tmp_path / "run" / "logs").is_dir()
    again = load_config(path)  # what every service reads back
    assert again.learner.steps == 7 and again.algorithm.kl_coef == 0.04
    assert again.run.dir == str((tmp_path / "run").resolve())
    assert again.reference.grpc_port > 0 and again.learner.grpc_port > 0
    assert again == resolved
    assert cfg.reference.grpc_port == 0  # the caller's config is not changed


def test_service_specs_follow_replicas_and_reference(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    cfg = cfg_with(algorithm={"preset": "grpo"}, rollout={"replicas": 2, "kv_cache_gb": 2.0}, reward={"replicas": 3})
    keys = [f"{s.name}-{s.replica}" for s in service_specs(cfg)]
    assert keys == ["rollout-0", "rollout-1", "reward-0", "reward-1", "reward-2", "reference-0", "learner-0"]
    env = {f"{s.name}-{s.replica}": s.env for s in service_specs(cfg)}
    assert "VLLM_CPU_KVCACHE_SPACE" not in env["rollout-1"]  # whole GiB only: the engine passes bytes
    assert env["reward-0"]["OMP_NUM_THREADS"] == "1"


def test_no_reference_without_kl_and_no_sampling_offline():
    no_kl = [s.name for s in service_specs(cfg_with(algorithm={"preset": "dapo"}))]
    assert no_kl == ["rollout", "reward", "learner"]
    dpo = [s.name for s in service_specs(cfg_with(algorithm={"preset": "dpo"}))]
    assert dpo == ["reference", "learner"]


def test_user_environment_wins(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    specs = service_specs(cfg_with(algorithm={"preset": "dapo"}))
    assert all("OMP_NUM_THREADS" not in s.env for s in specs)


def test_commands_resume_only_a_resumed_learner_and_scale_as_first_started(tmp_path):
    """What a phase is given is enough: the commands of a run (made from the prepared run and
    the bus url) add --resume to the learner of a resumed run only, a replica `meshrl scale`
    adds gets the command and kind's files a first start would, and the learner its grace."""
    cfg = cfg_with(algorithm={"preset": "grpo"}, learner={"stop_grace_s": 42.0})
    fresh = ServiceCommands(prepare_run(cfg, tmp_path / "run", run_id="r-1"), "nats://h:1")
    resumed = ServiceCommands(prepare_run(cfg, tmp_path / "run", run_id="r-2", resume=True), "nats://h:1")
    specs = {s.name: s for s in service_specs(fresh.run.cfg)}
    assert "--resume" not in fresh.of(specs["learner"])[0]
    assert resumed.of(specs["learner"])[0][-2:] == ["--resume", str((tmp_path / "run").resolve())]
    assert "--resume" not in resumed.of(specs["rollout"])[0]
    assert fresh.of_replica("rollout", 0) == fresh.of(specs["rollout"])
    assert fresh.of_replica("reward", 3)[0][-1] == "reward-3"
    assert specs["learner"].stop_grace_s == 42.0 and specs["rollout"].stop_grace_s is None


def test_service_argv_is_the_process_contract(tmp_path):
    spec = service_specs(cfg_with())[0]
    assert service_argv(spec, "nats://127.0.0.1:4222", "r-1", tmp_path / "config.yaml") == [
        sys.executable,
        "-m",
        "meshrl.services.rollout",
        "--nats",
        "nats://127.0.0.1:4222",
        "--run-id",
        "r-1",
        "--config",
        str(tmp_path / "config.yaml"),
        "--replica-id",
        "rollout-0",
    ]


def test_run_id_is_a_valid_subject_token():
    run_id = make_run_id("my run.v2*")
    assert run_id.startswith("my-run-v2-") and all(c.isalnum() or c in "-_" for c in run_id)


def test_metrics_tail_reads_only_new_complete_lines(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps({"step": 0, "reward": 9.0}) + "\n")  # an earlier run
    tail = MetricsTail(path)
    assert tail.read_new() == []
    with path.open("a") as f:
        f.write(json.dumps({"step": 1, "reward": 0.25}) + "\n" + '{"step": 2, "rew')
    assert tail.read_new() == [{"step": 1, "reward": 0.25}]
    with path.open("a") as f:
        f.write('ard": 0.5}\n')
    assert tail.read_new() == [{"step": 2, "reward": 0.5}]


def test_progress_counts_steps_and_shows_reward_kl_throughput(tmp_path):
    path = tmp_path / "metrics.jsonl"
    screen = io.StringIO()
    bar = RunProgress(path, total_steps=4, desc="r-1", file=screen)
    bar.update()  # no file yet
    rows = [{"step": i, "reward": 0.1 * i, "kl": 0.001, "perf/throughput": 123.4} for i in (1, 2)]
    rows[0]["step"], rows[1]["step"] = 0, 1  # the learner logs 0-based steps
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bar.update()
    assert bar.steps_done == 2 and bar.bar.n == 2 and bar.last == rows[-1]
    assert postfix(bar.last) == {"reward": "0.200", "kl": "0.0010", "tok/s": "123"}
    bar.close()
    assert "r-1:  50%" in screen.getvalue() and "2/4" in screen.getvalue()
    assert "reward=0.200, kl=0.0010, tok/s=123" in screen.getvalue()
    assert postfix({"step": 1, "reward": None}) == {}


def test_progress_of_a_resumed_run_starts_at_the_checkpoint_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": i}) + "\n" for i in range(3)))  # the first start
    bar = RunProgress(path, total_steps=10, file=io.StringIO())
    with path.open("a") as f:  # the resumed learner continues at step 3
        f.write(json.dumps({"step": 3}) + "\n" + json.dumps({"step": 4}) + "\n")
    bar.update()
    assert bar.steps_done == 5 and bar.bar.n == 5
    bar.close()


def test_run_result_summary(tmp_path):
    text = RunResult("r-1", tmp_path, 5, {"reward": 0.5, "kl": 0.01}).summary()
    assert text == f"run r-1 done: 5 steps, reward=0.5, kl=0.01; see {tmp_path}"


def test_the_runs_shm_files_are_freed_even_when_it_fails(tmp_path):
    (tmp_path / "meshrl-run-a").mkdir()
    (tmp_path / "meshrl-run-a" / "weights-v3.safetensors").write_bytes(b"x" * 10)
    (tmp_path / "meshrl-run-a-staging").mkdir()
    (tmp_path / "meshrl-run-a-rollout-0-v2.safetensors").write_bytes(b"y")
    (tmp_path / "meshrl-run-b").mkdir()  # another run's: kept
    with pytest.raises(RuntimeError), freed_shm("run-a", root=tmp_path):
        raise RuntimeError("a service died")
    assert [p.name for p in tmp_path.iterdir()] == ["meshrl-run-b"]


def test_metrics_tail_survives_the_resume_rewriting_the_file(tmp_path):
    """A resumed learner drops the rows it trains again (in place): the tail neither crashes on
    the cut nor misses the rows appended after it."""
    from meshrl.services.learner.metric_logger import forget_steps_from

    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(4)))
    tail = MetricsTail(path)
    tail.offset = 0
    assert [r["step"] for r in tail.read_new()] == [0, 1, 2, 3]
    forget_steps_from(path, 2)
    assert tail.read_new() == []
    with path.open("a") as f:
        f.write(json.dumps({"step": 2, "loss": 0.5}) + "\n" + "garbage}\n")
    assert [r["step"] for r in tail.read_new()] == [2]
