"""Data checks: each configured data file is readable and its first row is a valid row.

Prompt rows (verl) for online algorithms, DPO rows (TRL) when `algorithm.offline` is set;
validated with meshrl.inputs.data.rows, so the message names file, line, field and fix.
"""

from __future__ import annotations

from meshrl.cli.doctor.check import Check, failed, passed, skipped
from meshrl.inputs.data.load import iter_rows
from meshrl.inputs.data.rows import DatasetError, validate_dpo_row, validate_prompt_row

NAME = "data"


def _first_row(path: str, kind: str) -> str:
    validate = validate_dpo_row if kind == "dpo" else validate_prompt_row
    for ref, row in iter_rows(path):
        validate(row, ref)
        return f"{path}: first row ({ref.unit} {ref.index}) is a valid {kind} row"
    raise DatasetError(f"{path} has no rows; write at least one (`meshrl data arithmetic --out {path}`)")


def check_data(ctx) -> Check:
    if ctx.config is None:
        return skipped(NAME, "no config given")
    cfg = ctx.config
    kind = "dpo" if cfg.algorithm.offline else "prompt"
    found = []
    for key, path in (("data.train", cfg.data.train), ("data.eval", cfg.data.eval)):
        if path is None:
            continue
        try:
            found.append(_first_row(path, kind))
        except DatasetError as err:
            return failed(NAME, f"{key}: {err}", f"fix {key} or the file: {err}")
        except OSError as err:  # unreadable: permissions, a directory, I/O error
            return failed(
                NAME,
                f"{key}: cannot read {path}: {err}",
                f"make {path} readable by this user (chmod/chown) or point {key} at another file",
            )
    return passed(NAME, "; ".join(found))
