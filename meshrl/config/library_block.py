"""What every environment-adapter block whose library runs in its own interpreter (a library
worker child) shares: the library's keyword arguments and that interpreter (`python: ""`
= the adapter venv: meshrl/transport/library/venvs.py)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import field_validator

from meshrl.config.algorithm import Strict


class LibraryBlock(Strict):
    library: ClassVar[str]  # the block's key under `environment:` (textarena, verifiers)
    args: dict[str, Any] = {}
    python: str = ""

    @field_validator("python")
    @classmethod
    def _one_line(cls, python: str) -> str:
        if any(c in python for c in "\n\r\0"):
            raise ValueError(f"environment.{cls.library}.python: a path to an interpreter, on one line")
        return python
