"""Where the textarena adapter's pieces are: the handlers script the library worker serves, and
the interpreter used when `environment.textarena.python` is "" (the checkout's adapter venv,
built by `bash scripts/adapter_venv.sh textarena`)."""

from __future__ import annotations

import os
from pathlib import Path

HANDLERS = str(Path(__file__).resolve().with_name("handlers.py"))
ROOT = Path(__file__).resolve().parents[4]  # the checkout: services/environment/adapters/textarena
DEFAULT_PYTHON = ROOT / ".venv-adapters" / "textarena" / "bin" / "python"


def python_of(block) -> str:
    """The interpreter the block names (relative to the working directory), else
    $MESHRL_ADAPTER_VENVS/textarena/bin/python, else the checkout's."""
    if block.python:
        return str(Path(block.python).expanduser().absolute())
    root = os.environ.get("MESHRL_ADAPTER_VENVS")
    return str(Path(root) / "textarena" / "bin" / "python") if root else str(DEFAULT_PYTHON)


def init_params(block) -> dict:
    return {"game": block.game, "args": dict(block.args)}
