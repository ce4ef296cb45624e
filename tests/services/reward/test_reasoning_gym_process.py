"""The reward service as a process (`python -m meshrl.services.reward`) on a real nats-server with
a `reasoning_gym` component: a group of a real reasoning-gym row in, reasoning-gym's own scores
out (its scorer child in the venv tests/fixtures/adapters.py builds); a missing venv stops the
service before it starts, one line and exit 2."""

import asyncio
import json
import signal
import subprocess
import sys

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.inputs.data.reasoning_gym.rows import reasoning_gym_rows, task_specs
from meshrl.transport.bus.codec import pack_int32
from tests.fixtures.adapters import adapter_python
from tests.services.reward.test_service_process import write_reward_config


def reward_cmd(nats_url: str, run_id: str, config: str) -> list[str]:
    return [sys.executable, "-m", "meshrl.services.reward", "--nats", nats_url, "--run-id", run_id, "--config", config]


def legs_group(run_id: str, python: str) -> tuple[common_pb2.Group, str]:
    """A group of one real leg_counting row, answered right, inside a longer answer, and untagged."""
    (row,) = reasoning_gym_rows(python, task_specs("leg_counting"), n=1, seed=5)
    answer = row["reward_model"]["ground_truth"]
    task = common_pb2.PromptTask(
        run_id=run_id, group_id="g1", ground_truth=answer, extra_json=json.dumps(row["extra_info"])
    )
    responses = [f"<answer>{answer}</answer>", f"<answer>{answer} legs</answer>", answer]
    samples = [
        common_pb2.Sample(index=i, response_text=r, response_token_ids=pack_int32(range(len(r))))
        for i, r in enumerate(responses)
    ]
    return common_pb2.Group(run_id=run_id, group_id="g1", task=task, samples=samples), answer


@pytest.mark.timeout(180)
async def test_a_group_is_scored_by_the_tasks_own_scorer(bus, nats_url, run_id, tmp_path):
    python = adapter_python("reasoning_gym")
    component = {"name": "correct", "kind": "reasoning_gym", "params": {"python": python}}
    proc = subprocess.Popen(
        reward_cmd(nats_url, run_id, write_reward_config(tmp_path, {"components": [component]})),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        group, answer = await asyncio.to_thread(legs_group, run_id, python)  # its own event loop
        await bus.publish("generated", group, msg_id="g1")
        got = await bus.pull("ready", "learner", max_msgs=1, timeout=90)
        assert got, "no scored group on ready within 90 s"
        await got[0].ack()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    scored = got[0].message
    # leg_counting's scorer: exact 1.0; the answer inside "A legs": len(A)/len(A + " legs"); no tag 0.0
    assert [s.reward for s in scored.samples] == pytest.approx([1.0, len(answer) / (len(answer) + 5), 0.0])


@pytest.mark.timeout(120)
def test_a_missing_venv_stops_the_service_before_it_starts(nats_url, run_id, tmp_path):
    component = {"name": "correct", "kind": "reasoning_gym", "params": {"python": str(tmp_path / "no" / "python")}}
    proc = subprocess.run(
        reward_cmd(nats_url, run_id, write_reward_config(tmp_path, {"components": [component]})),
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "is missing" in line]
    assert len(lines) == 1 and lines[0].endswith("build it with: bash scripts/adapter_venv.sh reasoning_gym")
