"""The child side of a library worker: serves a handlers script's functions over JSON lines.

Runs in the LIBRARY's interpreter (a venv with verifiers, reasoning-gym, textarena, ...),
never in meshrl's, so it imports nothing of meshrl and only the standard library:

    /path/to/adapter-venv/bin/python child.py HANDLERS_SCRIPT

Protocol, one JSON object per line:
- stdin  -> {"id": 1, "method": "reset", "params": {...}}
- stdout <- {"id": 1, "result": ...} or {"id": 1, "error": {"kind": "ValueError", "message": "..."}}
- the first line out is {"ready": true} once the script imported, or {"fatal": "..."} and exit 2.
Calls run concurrently: an async handler as a task on the child's event loop, a sync one in a
thread. The library's own prints would corrupt the protocol, so file descriptor 1 is pointed at
stderr and the protocol writes to a private duplicate of the original stdout.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import os
import sys
import traceback


def protocol_stdout():
    """A private handle on the original stdout; fd 1 (and sys.stdout) then go to stderr."""
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def load_handlers(path: str):
    spec = importlib.util.spec_from_file_location("library_handlers", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load handlers script {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    return module


def no_init(**params) -> dict:
    return {}


def handler_of(module, method: str):
    fn = getattr(module, method, None) if method and not method.startswith("_") else None
    if fn is None and method == "init":  # a script without set-up work
        return no_init
    if not callable(fn):
        raise LookupError(f"the handlers script has no function {method!r}")
    return fn


async def invoke(module, method: str, params: dict):
    fn = handler_of(module, method)
    if inspect.iscoroutinefunction(fn):
        return await fn(**params)
    return await asyncio.to_thread(fn, **params)


def error_of(err: BaseException) -> dict:
    message = str(err) or type(err).__name__
    tb = traceback.format_exception(type(err), err, err.__traceback__)
    sys.stderr.write("".join(tb))
    return {"kind": type(err).__name__, "message": message[:4000]}


class Server:
    """Reads requests from stdin, answers each as soon as its handler returns."""

    def __init__(self, module, out):
        self.module, self.out = module, out
        self.tasks: set[asyncio.Task] = set()

    def send(self, message: dict) -> None:
        try:
            line = json.dumps(message, allow_nan=False)
        except (TypeError, ValueError) as err:
            line = json.dumps({"id": message.get("id"), "error": {"kind": "NotJSON", "message": str(err)}})
        self.out.write(line + "\n")
        self.out.flush()

    async def answer(self, request: dict) -> None:
        try:
            result = await invoke(self.module, request.get("method", ""), request.get("params") or {})
            self.send({"id": request.get("id"), "result": result})
        except Exception as err:  # a handler's failure is the caller's answer, never the child's end
            self.send({"id": request.get("id"), "error": error_of(err)})

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 << 20, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            task = asyncio.create_task(self.answer(json.loads(line)))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        await asyncio.gather(*self.tasks, return_exceptions=True)


def main(argv: list[str]) -> int:
    out = protocol_stdout()
    try:
        module = load_handlers(argv[1])
    except BaseException as err:  # ImportError of the library above all: say it in one line
        out.write(json.dumps({"fatal": f"{type(err).__name__}: {err}"}) + "\n")
        out.flush()
        traceback.print_exc()
        return 2
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    asyncio.run(Server(module, out).run())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
