"""Where the textarena adapter's pieces are: the handlers script the library worker serves, and
the interpreter used when `environment.textarena.python` is "" (the checkout's adapter venv,
built by `bash scripts/adapter_venv.sh textarena`)."""

from __future__ import annotations

from pathlib import Path

from meshrl.transport.library.venvs import adapter_python

HANDLERS = str(Path(__file__).resolve().with_name("handlers.py"))


def python_of(block) -> str:
    """The interpreter the block names, else the textarena adapter venv (transport/library/venvs.py)."""
    return adapter_python("textarena", block.python)


def init_params(block) -> dict:
    return {"game": block.game, "args": dict(block.args)}
