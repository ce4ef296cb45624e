"""Where the verifiers adapter's pieces are: the handlers script the library worker serves,
and the interpreter used when `environment.verifiers.python` is "": $MESHRL_ADAPTER_VENVS/verifiers
(an image's venvs), else the checkout's adapter venv (`bash scripts/adapter_venv.sh verifiers`)."""

from __future__ import annotations

from pathlib import Path

from meshrl.transport.library.venvs import adapter_python, checkout_python

HANDLERS = str(Path(__file__).resolve().with_name("handlers.py"))
DEFAULT_PYTHON = checkout_python("verifiers")


def default_python() -> str:
    return adapter_python("verifiers")


def python_of(block) -> str:
    """The interpreter the block names, else the verifiers adapter venv (transport/library/venvs.py)."""
    return adapter_python("verifiers", block.python)


def init_params(block) -> dict:
    return {"module": block.module, "args": dict(block.args)}
