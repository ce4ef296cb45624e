"""Where an adapter's library venv is: the interpreter a setting names, else
`$MESHRL_ADAPTER_VENVS/NAME/bin/python` (an image's venvs), else the checkout's
`.venv-adapters/NAME/bin/python` (what `bash scripts/adapter_venv.sh NAME` builds). One rule
for every adapter (verifiers, textarena, reasoning-gym, ...)."""

from __future__ import annotations

import os
from pathlib import Path

VENVS_ENV = "MESHRL_ADAPTER_VENVS"
CHECKOUT = Path(__file__).resolve().parents[3]  # meshrl/transport/library/venvs.py -> the checkout


def checkout_python(name: str) -> Path:
    return CHECKOUT / ".venv-adapters" / name / "bin" / "python"


def adapter_python(name: str, named: str = "") -> str:
    """The interpreter `named` (relative to the working directory), else the default above."""
    if named:
        return str(Path(named).expanduser().absolute())
    root = os.environ.get(VENVS_ENV)
    return str(Path(root) / name / "bin" / "python") if root else str(checkout_python(name))
