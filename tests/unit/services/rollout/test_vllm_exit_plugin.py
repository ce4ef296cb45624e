"""The vLLM plugin that lets vLLM's own processes exit quickly (services/rollout/vllm_exit_plugin.py,
meshrl/quick_exit.py):
declared where vLLM looks for it, a no-op in the front end, and in a spawned child it leaves
cyclic garbage uncollected at exit (what made a worker outlive vLLM's 5 s grace) and writes
nothing on stderr after the point where every clean-up ran.

The children here are plain multiprocessing children standing in for vLLM's engine core and
worker (spawned the same way); the whole engine's stop is tests/services/rollout/test_main.py.
"""

import atexit
import multiprocessing
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

from meshrl.services.rollout import vllm_exit_plugin


def test_declared_as_a_vllm_general_plugin():
    (plugin,) = [e for e in entry_points(group="vllm.general_plugins") if e.name == "meshrl_quick_exit"]
    assert plugin.load() is vllm_exit_plugin.leave_quickly_at_exit


def test_nothing_registered_in_the_front_end(monkeypatch):
    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    vllm_exit_plugin.leave_quickly_at_exit()
    assert multiprocessing.parent_process() is None and registered == []


CHILD = textwrap.dedent(
    """
    import multiprocessing, sys

    class Noisy:  # in a reference cycle: only the interpreter's final collection would free it
        def __del__(self):
            with open(sys.argv[1], "a") as seen:
                seen.write("collected\\n")
            sys.stderr.write("collected at teardown\\n")

    def child(path, plugin):
        sys.argv[1:] = [path]
        if plugin:
            from meshrl.services.rollout.vllm_exit_plugin import leave_quickly_at_exit
            leave_quickly_at_exit()
        cycle = Noisy()
        cycle.me = cycle
        del cycle

    if __name__ == "__main__":
        ctx = multiprocessing.get_context("spawn")
        process = ctx.Process(target=child, args=(sys.argv[1], sys.argv[2] == "plugin"))
        process.start()
        process.join(60)
        sys.exit(process.exitcode)
    """
)


def run_child(tmp_path, mode: str) -> tuple[str, str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    seen = tmp_path / f"seen-{mode}"
    done = subprocess.run([sys.executable, str(script), str(seen), mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return (seen.read_text() if seen.exists() else ""), done.stderr


def test_a_spawned_child_skips_its_final_collection_and_is_quiet(tmp_path):
    assert run_child(tmp_path, "none") == ("collected\n", "collected at teardown\n")  # the control
    assert run_child(tmp_path, "plugin") == ("", "")
