"""meshrl doctor on real things: the tiny model dir, data files, the session NATS server, a
real gRPC reward server, and an address nobody listens on."""

import argparse
import asyncio
import json

import pytest
import yaml

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.cli.doctor import add_subcommand, checks_disk, cmd_doctor, run_doctor
from meshrl.cli.doctor.checks_system import check_transformers
from meshrl.cli.doctor.gloo import check_gloo
from meshrl.transport.rpc import registration, start_server, stop_server

HEAVY = ["accelerators", "gloo", "transformers", "vllm"]  # heavy imports / spawn: tested on their own below
# tiny Llama (meshrl.inputs.models.tiny): vocab 128, hidden 64, 2 layers, 4 heads × 32, 2 kv heads, MLP 256, tied
LAYER = 64 * 128 + 64 * 64 + 64 * 64 + 128 * 64 + 3 * 64 * 256 + 2 * 64  # q k v o, gate up down, 2 norms
TINY_PARAMS = 128 * 64 + 2 * LAYER + 64  # = 155_968
GOOD_ROW = {"prompt": [{"role": "user", "content": "3+4?"}], "reward_model": {"ground_truth": "7"}}


def write_config(tmp_path, model_path, *, train_rows=(GOOD_ROW,), nats_url="embedded", components=None):
    train = tmp_path / "train.jsonl"
    if isinstance(train_rows, str):
        train.write_text(train_rows)
    else:
        train.write_text("".join(json.dumps(r) + "\n" for r in train_rows))
    tree = {
        "run": {"name": "doc", "dir": str(tmp_path / "runs" / "doc")},
        "model": {"path": str(model_path)},
        "data": {"train": str(train)},
        "nats": {"url": nats_url},
    }
    if components:
        tree["reward"] = {"components": components}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


def by_name(results):
    return {r.name: r for r in results}


def test_good_config_passes_file_and_nats_checks(tmp_path, tiny_model_dir, nats_url):
    results = by_name(run_doctor(write_config(tmp_path, tiny_model_dir, nats_url=nats_url), skip=HEAVY))
    for name in ("config", "nats-server binary", "nats + jetstream", "model", "data", "disk for checkpoints"):
        assert results[name].status == "pass", (name, results[name].detail)
    assert results["model"].detail.endswith(f"llama, {TINY_PARAMS / 1e6:.2f}M parameters")  # 0.16M
    # (3 kept + 1 being written) × 155_968 params × 12 B = 7_486_464 B
    assert "3+1 checkpoints × 0.00187 GB = 0.00749 GB needed" in results["disk for checkpoints"].detail
    assert results["data"].detail.endswith("train.jsonl: all 1 rows are valid prompt rows")
    assert results["nats + jetstream"].detail.startswith(f"{nats_url}: JetStream on")
    assert results["external rewards"].status == "skip"
    assert [results[k].status for k in ("accelerators", "gloo all-reduce (2 ranks)", "vllm importable")] == ["skip"] * 3


def test_missing_model_path_fails_with_fix(tmp_path, tiny_model_dir):
    results = by_name(run_doctor(write_config(tmp_path, tmp_path / "no-such-model"), skip=HEAVY + ["nats"]))
    model = results["model"]
    assert model.status == "fail" and "no-such-model does not exist" in model.detail
    assert model.fix.startswith("fix model.path in the config") and "meshrl.inputs.models.fetch" in model.fix
    assert results["disk for checkpoints"].status == "skip"  # no model size to estimate from
    assert results["data"].status == "pass"  # the others still ran


@pytest.mark.parametrize(
    "rows, expected",
    [
        ('{"prompt": "x", "reward_model": \n', "line 1: not valid JSON"),
        ([{"prompt": "3+4?"}], "field 'reward_model.ground_truth' is missing"),
        ("", "has no rows"),
        # every row is checked, not the first: a bad row 3 of 4 and another at 4 (issue 23)
        (
            [GOOD_ROW, GOOD_ROW, {"prompt": "3+4?"}, {"reward_model": {"ground_truth": "7"}}],
            "2 of 4 rows are not valid prompt rows; the first: ",
        ),
        ([GOOD_ROW, GOOD_ROW, GOOD_ROW, {"prompt": "3+4?"}], "line 4: field 'reward_model.ground_truth' is missing"),
        (json.dumps(GOOD_ROW) + "\n" * 3 + '{"prompt": \n', "line 4: not valid JSON"),
    ],
)
def test_bad_data_fails_with_file_line_and_fix(tmp_path, tiny_model_dir, rows, expected):
    data = by_name(run_doctor(write_config(tmp_path, tiny_model_dir, train_rows=rows), skip=HEAVY + ["nats"]))["data"]
    assert data.status == "fail" and expected in data.detail
    assert data.fix.startswith("fix data.train or the file:") and str(tmp_path / "train.jsonl") in data.fix


def test_missing_data_file_and_bad_config(tmp_path, tiny_model_dir):
    cfg = write_config(tmp_path, tiny_model_dir)
    (tmp_path / "train.jsonl").unlink()
    data = by_name(run_doctor(cfg, skip=HEAVY + ["nats"]))["data"]
    assert data.status == "fail" and "train.jsonl does not exist" in data.detail
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {path: x}\ndata: {train: y}\nlearner: {stepz: 3}\n")
    results = by_name(run_doctor(bad, skip=HEAVY + ["nats", "nats-binary"]))
    assert results["config"].status == "fail" and "learner.stepz: unknown key" in results["config"].detail
    assert {results[k].status for k in ("model", "data", "disk for checkpoints")} == {"skip"}


def test_disk_too_small_fails_with_numbers(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setattr(checks_disk.shutil, "disk_usage", lambda p: type("U", (), {"free": 1_486_464})())
    disk = by_name(run_doctor(write_config(tmp_path, tiny_model_dir), skip=HEAVY + ["nats"]))["disk for checkpoints"]
    assert disk.status == "fail" and "0.00749 GB needed, 0.00149 GB free at" in disk.detail
    assert disk.fix.startswith("free 0.006 GB there")  # 7_486_464 - 1_486_464 = 6_000_000 B


class Ok(reward_pb2_grpc.RewardServiceServicer):
    async def Score(self, request, context):
        return reward_pb2.ScoreResponse(
            results=[reward_pb2.ScoreResult(id=i.id, status=common_pb2.SCORE_STATUS_OK) for i in request.items]
        )


async def test_external_rewards_healthy_and_unreachable(tmp_path, tiny_model_dir, dead_port):
    server, port = await start_server(
        [
            registration(
                reward_pb2_grpc.add_RewardServiceServicer_to_server,
                Ok(),
                reward_pb2.DESCRIPTOR.services_by_name["RewardService"],
            )
        ]
    )
    dead = dead_port
    cfg = write_config(
        tmp_path,
        tiny_model_dir,
        components=[
            {"name": "judge", "kind": "external", "address": f"127.0.0.1:{port}"},
            {"name": "gone", "kind": "external", "address": f"127.0.0.1:{dead}"},
            {"name": "math", "kind": "math_verify"},
        ],
    )
    try:  # a thread: this loop must keep serving the health checks
        results = by_name(await asyncio.to_thread(run_doctor, cfg, skip=HEAVY + ["nats"], reward_timeout_s=0.5))
    finally:
        await stop_server(server, grace=0)
    assert results["external reward 'judge'"].status == "pass"
    gone = results["external reward 'gone'"]
    assert gone.status == "fail" and f"127.0.0.1:{dead} was not SERVING within 0.5 s" in gone.detail
    assert gone.fix.startswith(f"start the reward service at 127.0.0.1:{dead}")


def test_cmd_doctor_prints_table_and_exit_code(tmp_path, tiny_model_dir, capsys):
    parser = argparse.ArgumentParser()
    add_subcommand(parser.add_subparsers())
    good = write_config(tmp_path, tiny_model_dir)
    assert cmd_doctor(parser.parse_args(["doctor", str(good), "--skip", *HEAVY, "nats"])) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["status", "check", "time", "detail"]
    assert out[-1] == "5 passed, 0 failed, 7 skipped"  # config, nats binary, model, data, disk (no environment)
    bad = write_config(tmp_path, tmp_path / "missing")
    # a refused config: exit 2 (as meshrl train), and nothing past the config's own checks ran
    assert cmd_doctor(parser.parse_args(["doctor", str(bad), "--skip", *HEAVY])) == 2
    text = capsys.readouterr().out
    assert "FAIL    model" in text and "        FIX: fix model.path in the config" in text
    assert "SKIP    nats + jetstream" in text and "the config is refused above: fix it first" in text


def test_unknown_skip_name():
    with pytest.raises(
        ValueError, match=r"unknown doctor check\(s\) \['gpu'\]; known: model, data, accelerators, gloo"
    ):
        run_doctor(skip=["gpu"])


@pytest.mark.slow
def test_gloo_all_reduce_on_two_spawned_ranks():
    check = check_gloo(None)
    assert check.status == "pass" and check.detail.startswith("sum [3.0, 30.0] over 2 ranks on 127.0.0.1")


def test_transformers_check_names_the_breaking_packages(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "transformers.modeling_utils", None)  # import fails
    check = check_transformers(None)
    assert check.status == "fail" and "transformers' model code does not import: ModuleNotFoundError" in check.detail
    assert check.fix.startswith("`.venv/bin/pip uninstall -y torch") or check.fix == "reinstall transformers in .venv"
