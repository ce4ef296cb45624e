"""Read dataset rows from .jsonl or .parquet, streaming, each with where it came from.

`iter_rows(path)` yields `(RowRef, dict)` without holding the file in memory (jsonl line by
line, parquet batch by batch with pyarrow). `load_rows(path, kind=...)` validates them into
`PromptRow` / `PreferenceRow`. `write_rows(path, rows)` writes either format (by suffix).

Usage:
    rows = load_rows("data/train.jsonl", kind="prompt")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from meshrl.inputs.data.rows import DatasetError, RowRef, validate_dpo_row, validate_prompt_row

FORMATS = (".jsonl", ".parquet")
VALIDATORS = {"prompt": validate_prompt_row, "dpo": validate_dpo_row}


def _checked_path(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if p.suffix not in FORMATS:
        raise DatasetError(f"{p}: unsupported file type {p.suffix!r}; use one of {list(FORMATS)}")
    if not p.is_file():
        raise DatasetError(
            f"{p} does not exist; set data.train to a .jsonl or .parquet file "
            f"(`python -m meshrl.inputs.data.arithmetic --out FILE` makes one)"
        )
    return p


def iter_rows(path: str | Path) -> Iterator[tuple[RowRef, dict]]:
    """(where, raw row) for every row; jsonl blank lines are skipped but keep the numbering."""
    p = _checked_path(path)
    yield from (_iter_jsonl(p) if p.suffix == ".jsonl" else _iter_parquet(p))


def _decoded(raw: bytes, ref: RowRef) -> str:
    """One jsonl line as text; a non-UTF-8 byte names its line and column, not just a file."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DatasetError(
            f"{ref}: byte 0x{raw[err.start]:02x} at column {err.start + 1} is not "
            f"UTF-8; save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 IN > OUT`)"
        ) from None


def _iter_jsonl(p: Path) -> Iterator[tuple[RowRef, dict]]:
    with open(p, "rb") as fh:  # bytes: a decode error must name its line (text mode cannot)
        for number, raw in enumerate(fh, start=1):
            ref = RowRef(str(p), number, "line")
            line = _decoded(raw, ref)
            if not line.strip():
                continue
            try:
                yield ref, json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(
                    f"{ref}: not valid JSON ({err.msg} at column {err.colno}); each line must be one JSON object"
                ) from None


def _iter_parquet(p: Path, batch_size: int = 1024) -> Iterator[tuple[RowRef, dict]]:
    import pyarrow.parquet as pq  # lazy: pyarrow, only for parquet files

    try:
        reader = pq.ParquetFile(p)
    except Exception as err:
        raise DatasetError(f"{p}: not a readable parquet file ({err}); write it again") from err
    index = 0
    for batch in reader.iter_batches(batch_size=batch_size):
        for row in batch.to_pylist():
            yield RowRef(str(p), index, "row"), row
            index += 1


def load_rows(path: str | Path, kind: str | None = "prompt") -> list:
    """Validated rows (`kind` "prompt" or "dpo"), or raw dicts when `kind` is None."""
    if kind is None:
        return [row for _, row in iter_rows(path)]
    if kind not in VALIDATORS:
        raise DatasetError(f"kind={kind!r}: use one of {sorted(VALIDATORS)} or None")
    validate = VALIDATORS[kind]
    return [validate(row, ref) for ref, row in iter_rows(path)]


def write_rows(path: str | Path, rows: Iterable[dict]) -> Path:
    """Write dict rows as jsonl (one object per line) or parquet, chosen by the suffix."""
    p = Path(path).expanduser()
    if p.suffix not in FORMATS:
        raise DatasetError(f"{p}: unsupported file type {p.suffix!r}; use one of {list(FORMATS)}")
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix == ".jsonl":
        with open(p, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    else:
        import pyarrow as pa  # lazy: pyarrow, only for parquet files
        import pyarrow.parquet as pq  # lazy: pyarrow, only for parquet files

        pq.write_table(pa.Table.from_pylist(list(rows)), p)
    return p
