"""vLLM's zmq sockets go in a folder of the engine's own (services/rollout/ipc_folder.py): the
variable is set only while the engine is built, and folders of processes that are gone are
removed by the next engine made on the host. The engine's own folder going at shutdown is in
tests/services/rollout/test_main.py (a real engine)."""

import os
import subprocess
import sys

from meshrl.services.rollout.ipc_folder import BASE_PATH_ENV, PREFIX, make_ipc_folder, vllm_binds_in


def test_the_variable_is_set_only_inside_the_block(tmp_path, monkeypatch):
    monkeypatch.setenv(BASE_PATH_ENV, "/elsewhere")
    with vllm_binds_in(tmp_path):
        assert os.environ[BASE_PATH_ENV] == str(tmp_path)
    assert os.environ[BASE_PATH_ENV] == "/elsewhere"
    monkeypatch.delenv(BASE_PATH_ENV)
    with vllm_binds_in(tmp_path):
        pass
    assert BASE_PATH_ENV not in os.environ


def test_a_new_folder_removes_those_of_dead_processes_only(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{PREFIX}{gone.stdout.strip()}-abc"
    alive = tmp_path / f"{PREFIX}{os.getppid()}-def"
    other = tmp_path / "someone-elses"
    for folder in (dead, alive, other):
        folder.mkdir()
        (folder / "3f1c-socket").touch()
    mine = make_ipc_folder(tmp_path)
    assert mine.name.startswith(f"{PREFIX}{os.getpid()}-") and mine.is_dir()
    assert not dead.exists() and alive.exists() and other.exists()
