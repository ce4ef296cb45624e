"""The torch-free config checks part names against the parts table (meshrl/config/
parts_table.json), which scripts/gen_parts_table.py writes from the registries: the table
equals what the registries hold, a stale one is reported naming the kind and the command,
and the config takes its names from the table, not from the parts' source.

    .venv/bin/python -m pytest -q tests/unit/config/test_parts_table.py
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meshrl.config import ConfigError, load_config, parts_table

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "gen_parts_table.py"
BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def test_the_table_is_what_the_registries_hold():
    """Fails after a part file is added, renamed or re-declared until the script is run."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_stale_table_is_reported_naming_the_kind_and_the_command(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("gen_parts_table", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stale = json.loads((REPO / "meshrl" / "config" / "parts_table.json").read_text())
    del stale["kinds"]["policy loss"]["names"]["ppo"]
    monkeypatch.setattr(script, "TABLE", tmp_path / "parts_table.json")
    script.TABLE.write_text(json.dumps(stale))
    monkeypatch.setattr(script, "REPO", tmp_path)
    assert script.main(["--check"]) == 1
    assert capsys.readouterr().out.strip() == (
        "parts_table.json is stale for: policy loss; run .venv/bin/python scripts/gen_parts_table.py"
    )


@pytest.fixture
def table_with_a_new_loss(monkeypatch):
    """The table as if a file declared `@register_policy_loss("test_only_loss", level="sequence")`."""
    kinds = json.loads(json.dumps(parts_table.kinds()))
    kinds["policy loss"]["names"]["test_only_loss"] = {"level": "sequence", "options": ["tau"]}
    monkeypatch.setattr(parts_table, "kinds", lambda: kinds)
    parts_table.registered.cache_clear()
    yield
    parts_table.registered.cache_clear()


def test_the_config_takes_names_and_declarations_from_the_table(table_with_a_new_loss):
    algo = load_config(
        base={**BASE, "algorithm": {"policy_loss": "test_only_loss", "loss_options": {"tau": 0.5}}}
    ).algorithm
    assert algo.policy_loss == "test_only_loss"
    with pytest.raises(ConfigError, match=r"importance_sampling_level='token' does nothing .*its ratio is sequence"):
        load_config(base={**BASE, "algorithm": {"policy_loss": "test_only_loss", "importance_sampling_level": "token"}})
    with pytest.raises(ConfigError, match=r"'gspo_x' is not a known policy loss \(did you mean 'gspo'\?\)"):
        load_config(base={**BASE, "algorithm": {"policy_loss": "gspo_x"}})


@pytest.fixture
def a_part_added_since_the_table(monkeypatch):
    """A policy loss registered live (as its new file's decorator would) that the table lacks,
    and a tree where a source file is newer than the table."""
    from meshrl.algos.registry import POLICY_LOSSES

    def test_late_loss(logprobs, old_logprobs, advantages, response_mask):
        raise AssertionError("the config never runs a part")

    POLICY_LOSSES.add("test_late_loss", test_late_loss, level="sequence", options=())
    monkeypatch.setattr(parts_table, "table_may_be_stale", lambda: True)
    parts_table.late_part.cache_clear()
    yield
    POLICY_LOSSES.remove("test_late_loss")
    parts_table.late_part.cache_clear()


def test_a_part_added_since_the_table_is_taken_from_the_live_registry(a_part_added_since_the_table, caplog):
    algo = load_config(base={**BASE, "algorithm": {"policy_loss": "test_late_loss"}}).algorithm
    assert algo.policy_loss == "test_late_loss"
    assert "run .venv/bin/python scripts/gen_parts_table.py" in caplog.text and "test_late_loss" in caplog.text
    # its declaration came along: a sequence-level loss refuses a token-level ratio
    with pytest.raises(ConfigError, match=r"importance_sampling_level='token' does nothing .*its ratio is sequence"):
        load_config(base={**BASE, "algorithm": {"policy_loss": "test_late_loss", "importance_sampling_level": "token"}})


def test_with_an_up_to_date_table_an_unknown_name_is_refused_without_the_registries(
    a_part_added_since_the_table, monkeypatch
):
    monkeypatch.setattr(parts_table, "table_may_be_stale", lambda: False)
    with pytest.raises(ConfigError, match=r"'test_late_loss' is not a known policy loss"):
        load_config(base={**BASE, "algorithm": {"policy_loss": "test_late_loss"}})


def test_the_table_may_be_stale_when_a_source_file_is_newer(tmp_path, monkeypatch):
    table = tmp_path / "meshrl" / "config" / "parts_table.json"
    table.parent.mkdir(parents=True)
    table.write_text("{}")
    part = tmp_path / "services" / "reward" / "rules" / "mine.py"
    part.parent.mkdir(parents=True)
    part.write_text("")
    monkeypatch.setattr(parts_table, "TABLE_FILE", table)
    os.utime(table, (1_000, 1_000))
    os.utime(part, (1_030, 1_030))  # written with the table (a clone, an install)
    parts_table.table_may_be_stale.cache_clear()
    assert not parts_table.table_may_be_stale()
    os.utime(part, (5_000, 5_000))  # an edit since
    parts_table.table_may_be_stale.cache_clear()
    assert parts_table.table_may_be_stale()
    parts_table.table_may_be_stale.cache_clear()
