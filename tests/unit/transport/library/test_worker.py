"""A library worker: a real child process (this interpreter standing in for a library's venv)
serving a handlers script written by the test."""

from __future__ import annotations

import asyncio
import sys
import textwrap

import pytest

from meshrl.transport.library import LibraryWorker, WorkerDied, WorkerError, WorkerStartError, WorkerTimeout, run_once

HANDLERS = """
import asyncio, os
STATE = {}

def init(greeting="hi"):
    STATE["greeting"] = greeting
    return {"ready_with": greeting}

def add(a, b):
    print("a library that prints on stdout")
    return a + b

async def slow_echo(text, gate):
    while not os.path.exists(gate):
        await asyncio.sleep(0.01)
    return text

async def greet(name):
    return f"{STATE['greeting']} {name}"

def boom():
    raise ValueError("no such row 7")

def die():
    import sys
    sys.stderr.write("about to die\\n")
    os._exit(3)

async def hang():
    await asyncio.sleep(3600)

def not_json():
    return {1, 2}
"""


def script(tmp_path, text=HANDLERS):
    path = tmp_path / "handlers.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


def run(coro):
    return asyncio.run(coro)


def test_calls_sync_and_async_handlers_after_init(tmp_path):
    async def go():
        worker = LibraryWorker(sys.executable, script(tmp_path), "demo")
        info = await worker.start({"greeting": "hello"})
        try:
            return info, await worker.call("add", {"a": 2, "b": 3}), await worker.call("greet", {"name": "ada"})
        finally:
            await worker.close()

    assert run(go()) == ({"ready_with": "hello"}, 5, "hello ada")


def test_calls_overlap_a_later_call_answers_first(tmp_path):
    gate = tmp_path / "gate"

    async def go():
        worker = LibraryWorker(sys.executable, script(tmp_path), "demo")
        await worker.start()
        slow = asyncio.create_task(worker.call("slow_echo", {"text": "slow", "gate": str(gate)}))
        fast = await worker.call("add", {"a": 1, "b": 1})
        done_before = slow.done()
        gate.touch()
        answer = await slow
        await worker.close()
        return fast, done_before, answer

    assert run(go()) == (2, False, "slow")


def test_a_raising_handler_is_the_callers_error_and_the_child_goes_on(tmp_path):
    async def go():
        worker = LibraryWorker(sys.executable, script(tmp_path), "demo")
        await worker.start()
        with pytest.raises(WorkerError) as err:
            await worker.call("boom")
        with pytest.raises(WorkerError) as not_json:
            await worker.call("not_json")
        with pytest.raises(WorkerError) as missing:
            await worker.call("nope")
        after = await worker.call("add", {"a": 1, "b": 2})
        await worker.close()
        return err.value, not_json.value, missing.value, after

    err, not_json, missing, after = run(go())
    assert (err.kind, err.message) == ("ValueError", "no such row 7")
    assert not_json.kind == "NotJSON"
    assert "no function 'nope'" in missing.message
    assert after == 3


def test_a_dead_child_fails_pending_calls_with_its_last_words_and_restarts(tmp_path):
    async def go():
        worker = LibraryWorker(sys.executable, script(tmp_path), "demo")
        await worker.start()
        hung = asyncio.create_task(worker.call("hang", timeout_s=60))
        with pytest.raises(WorkerDied) as died:
            await worker.call("die")
        with pytest.raises(WorkerDied):
            await hung
        with pytest.raises(WorkerDied):
            await worker.call("add", {"a": 1, "b": 1})
        await worker.start()
        again = await worker.call("add", {"a": 4, "b": 1})
        await worker.close()
        return str(died.value), again

    message, again = run(go())
    assert "about to die" in message
    assert again == 5


def test_a_call_past_its_deadline_times_out(tmp_path):
    async def go():
        worker = LibraryWorker(sys.executable, script(tmp_path), "demo")
        await worker.start()
        try:
            with pytest.raises(WorkerTimeout, match="'hang' within 0.2 s"):
                await worker.call("hang", timeout_s=0.2)
            return await worker.call("add", {"a": 1, "b": 1})
        finally:
            await worker.close()

    assert run(go()) == 2


@pytest.mark.parametrize(
    "text, expected",
    [
        ("import surely_not_installed_lib\n", "ModuleNotFoundError: No module named 'surely_not_installed_lib'"),
        (
            "def init():\n    raise RuntimeError('load_environment failed: bad arg')\n",
            "load_environment failed: bad arg",
        ),
    ],
)
def test_start_failures_are_one_line(tmp_path, text, expected):
    with pytest.raises(WorkerStartError) as err:
        run(LibraryWorker(sys.executable, script(tmp_path, text), "demo").start())
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_interpreter_names_the_command_that_builds_it(tmp_path):
    with pytest.raises(WorkerStartError, match=r"scripts/adapter_venv.sh verifiers"):
        run(LibraryWorker(str(tmp_path / "nope/bin/python"), script(tmp_path), "verifiers").start())


def test_run_once(tmp_path):
    assert run_once(sys.executable, script(tmp_path), "add", {"a": 20, "b": 22}) == 42
