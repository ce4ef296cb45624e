"""Start-up problems of the verifiers adapter are one line and exit 2, before anything is served:
the environment service (the mesh's process contract, real NATS) with an interpreter that is
not there, a module not installed in it, or a load_environment that raises; the launcher's
check before any service starts (`meshrl train`) and `meshrl doctor`'s row load the module the
same way, in the real adapter venv.

Run: .venv/bin/python -m pytest -q tests/services/environment/adapters/test_verifiers_startup.py
"""

import asyncio

import pytest

from meshrl.cli.doctor.checks_environment import check_environment
from meshrl.config import load_config
from meshrl.errors import LaunchError
from meshrl.launch.environment import check_environment_up
from tests.fixtures.run_config import write_config
from tests.fixtures.verifiers_envs import verifiers_python
from tests.services.environment.adapters.openenv_servers import environment_service

pytestmark = pytest.mark.slow  # each case imports verifiers in a child (tens of seconds on 2 cores)


@pytest.fixture(scope="module")
def vf_python() -> str:
    return verifiers_python()


def run_config(block: dict):
    base = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
    return load_config(base={**base, "environment": {"name": "sums", "verifiers": block}})


async def exits(tmp_path, nats_url, run_id, block: dict) -> tuple[int, str]:
    config = write_config(tmp_path, environment={"name": "sums", "verifiers": block})
    proc = environment_service(nats_url, run_id, config)
    out, _ = await asyncio.to_thread(proc.communicate, timeout=300)
    return proc.returncode, out


@pytest.mark.parametrize(
    "case, args, says",
    [
        ("no interpreter", None, "no python interpreter at /nowhere/bin/python"),
        ("not installed", {}, "Could not import 'meshrl_vf_nothing' environment"),
        ("load_environment raises", {"fail_load": True}, "the sums dataset is not there today"),
    ],
)
async def test_the_service_exits_2_with_one_line(tmp_path, nats_url, run_id, vf_python, case, args, says):
    module = "meshrl_vf_nothing" if case == "not installed" else "meshrl_vf_sums"
    python = "/nowhere/bin/python" if args is None else vf_python
    code, out = await exits(tmp_path, nats_url, run_id, {"module": module, "args": args or {}, "python": python})
    assert code == 2, out[-2000:]
    [line] = [line for line in out.splitlines() if says in line]
    assert "environment.verifiers" in line and "Traceback" not in out


def test_meshrl_train_stops_before_any_service_and_doctor_says_why(vf_python):
    broken = run_config({"module": "meshrl_vf_sums", "args": {"fail_load": True}, "python": vf_python})
    with pytest.raises(LaunchError) as stopped:
        check_environment_up(broken)
    assert "the sums dataset is not there today" in str(stopped.value)
    assert "\n" not in str(stopped.value)

    class Ctx:
        config = run_config({"module": "meshrl_vf_calc", "args": {"n": 5}, "python": vf_python})

    [row] = check_environment(Ctx)
    assert row.status == "pass", row
    assert row.detail == (
        "ToolEnv with 5 train rows, tools: add; rubric: correct_answer x 1, used_tool x 0.5, "
        "num_turns x 0, total_tool_calls x 0, add_calls x 0"
    )
