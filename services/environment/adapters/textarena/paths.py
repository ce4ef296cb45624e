"""Where the textarena adapter's pieces are: the handlers script the library worker serves, and
the interpreter used when `environment.textarena.python` is "" (the checkout's adapter venv,
built by `bash scripts/adapter_venv.sh textarena`)."""

from __future__ import annotations

from pathlib import Path

HANDLERS = str(Path(__file__).resolve().with_name("handlers.py"))
ROOT = Path(__file__).resolve().parents[4]  # the checkout: services/environment/adapters/textarena
DEFAULT_PYTHON = ROOT / ".venv-adapters" / "textarena" / "bin" / "python"


def python_of(block) -> str:
    """The interpreter the block names (relative to the working directory), else the default."""
    return str(Path(block.python).expanduser().absolute()) if block.python else str(DEFAULT_PYTHON)


def init_params(block) -> dict:
    return {"game": block.game, "args": dict(block.args)}
