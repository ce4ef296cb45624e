"""Data checks: each configured data file is readable and every row in it is a valid row (a
bad row deep in a file used to pass here, then stop the run when the feeder reached it).

Prompt rows (verl) for online algorithms, DPO rows (TRL) when `algorithm.offline` is set;
validated with meshrl.inputs.data.rows, so the message names file, line, field and fix.
"""

from __future__ import annotations

from meshrl.cli.doctor.check import Check, failed, passed, skipped
from meshrl.inputs.data.load import iter_rows
from meshrl.inputs.data.rows import DatasetError, validate_dpo_row, validate_prompt_row

NAME = "data"


def _every_row(path: str, kind: str) -> str:
    """'PATH: all N rows are valid KIND rows'; DatasetError naming the first bad row and how
    many are bad (a row that is not JSON stops the count there: the lines after it are unread)."""
    validate = validate_dpo_row if kind == "dpo" else validate_prompt_row
    count, bad, first = 0, 0, None
    for ref, row in iter_rows(path):
        count += 1
        try:
            validate(row, ref)
        except DatasetError as err:
            bad, first = bad + 1, first or err
    if first is not None:
        raise DatasetError(f"{bad} of {count} rows are not valid {kind} rows; the first: {first}")
    if count == 0:
        raise DatasetError(f"{path} has no rows; write at least one (`meshrl data arithmetic --out {path}`)")
    return f"{path}: all {count} rows are valid {kind} rows"


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
            found.append(_every_row(path, kind))
        except DatasetError as err:
            return failed(NAME, f"{key}: {err}", f"fix {key} or the file: {err}")
        except OSError as err:  # unreadable: permissions, a directory, I/O error
            return failed(
                NAME,
                f"{key}: cannot read {path}: {err}",
                f"make {path} readable by this user (chmod/chown) or point {key} at another file",
            )
    return passed(NAME, "; ".join(found))
