"""Where the verifiers adapter's pieces are: the handlers script the library worker serves,
and the interpreter used when `environment.verifiers.python` is "": $MESHRL_ADAPTER_VENVS/verifiers
(an image's venvs), else the checkout's adapter venv (`bash scripts/adapter_venv.sh verifiers`)."""

from __future__ import annotations

import os
from pathlib import Path

HANDLERS = str(Path(__file__).resolve().with_name("handlers.py"))
ROOT = Path(__file__).resolve().parents[4]  # the checkout: services/environment/adapters/verifiers
DEFAULT_PYTHON = ROOT / ".venv-adapters" / "verifiers" / "bin" / "python"


def default_python() -> str:
    root = os.environ.get("MESHRL_ADAPTER_VENVS")
    return str(Path(root) / "verifiers" / "bin" / "python") if root else str(DEFAULT_PYTHON)


def python_of(block) -> str:
    """The interpreter the block names (relative to the working directory), else the default."""
    return str(Path(block.python).expanduser().absolute()) if block.python else default_python()


def init_params(block) -> dict:
    return {"module": block.module, "args": dict(block.args)}
