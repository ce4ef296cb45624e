"""A property-based fuzz of the config loader (issue 31, point 6): for every generated config
file text and `key=value` overrides, `load_config` either returns a config, or raises a
ConfigError of one line; nothing else (no RecursionError, TypeError, traceback). A config
that loads also dumps, and the dump (RUN_DIR/config.yaml, what every service reads) loads
again to the same config.

A fixed set of cases each run (derandomize: the same seed in CI and here); the count is in
docs/security.md. Strategies: tests/fixtures/fuzz_configs.py.

Run: .venv/bin/python -m pytest tests/unit/config/test_fuzz_config.py -q
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given

from meshrl.config import ConfigError, load_config
from meshrl.config.load import dump_config
from tests.fixtures.fuzz_configs import BASE, fuzz, overrides, yaml_texts

CASES = 250
FOLDER = Path(tempfile.mkdtemp(prefix="meshrl-fuzz-config-"))
FUZZ = fuzz(CASES)


def loads_or_one_line(**kwargs):
    """The config, or None after checking the ConfigError is one line that says something."""
    try:
        return load_config(**kwargs)
    except ConfigError as err:
        message = str(err)
        assert message.strip() and "\n" not in message and "Traceback" not in message, message
        return None


def round_trips(cfg) -> None:
    saved = FOLDER / "config.yaml"
    saved.write_text(dump_config(cfg))
    assert load_config(saved) == cfg


@FUZZ
@given(yaml_texts(), overrides())
def test_any_file_and_overrides_load_or_give_one_line(text, items):
    path = FOLDER / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    cfg = loads_or_one_line(path=path, overrides=items)
    if cfg is not None:
        round_trips(cfg)


@FUZZ
@given(overrides())
def test_any_overrides_over_a_good_base_load_or_give_one_line(items):
    cfg = loads_or_one_line(base=BASE, overrides=items)
    if cfg is not None:
        round_trips(cfg)
