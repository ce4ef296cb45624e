"""The `verifiers:` block of the run's environment: a verifiers environment package the
environment service plays (services/environment/adapters/verifiers), in its own interpreter.

    environment:
      name: sums
      verifiers:
        module: my_env              # the package's module: its load_environment(**args) is called
        args: {num_train_examples: 1000}
        python: .venv-adapters/verifiers/bin/python   # a venv with verifiers and the package
                                    # ("" = that default, from the checkout; bash scripts/adapter_venv.sh verifiers)
        split: train                # the dataset the rows come from (meshrl data verifiers --split)
        timeout_s: 60               # one reset/step answer from the environment (its tools, its rubric)
        start_timeout_s: 300        # importing verifiers and load_environment at start

With no `address`, `meshrl train` launches the environment service that runs the adapter
(like a builtin), after checking that the interpreter imports the module and its
load_environment works. The run's rows are the environment's own dataset rows, written by
`meshrl data verifiers --module my_env --out FILE` (each carries its row index).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from meshrl.config.library_block import LibraryBlock

MODULE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


class VerifiersConfig(LibraryBlock):
    library = "verifiers"
    module: str = Field(pattern=MODULE_PATTERN, max_length=200)
    split: Literal["train", "eval"] = "train"
    timeout_s: float = Field(60.0, gt=0.0, le=3600.0)
    start_timeout_s: float = Field(300.0, gt=0.0, le=3600.0)
