"""`meshrl checkpoints list|tag|prune`, `rollback`, `export` handlers on a real run dir."""

import argparse
import json
from pathlib import Path

from meshrl.cli.checkpoints import add_subcommands, format_table, human_size
from meshrl.inputs.checkpoint.scan import CheckpointInfo
from tests.unit.inputs.checkpoint.conftest import save_run, tokenizer_dir  # noqa: F401 (fixtures: a saved run, a tokenizer)


def _run(argv) -> int:
    parser = argparse.ArgumentParser(prog="meshrl")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_list_tag_prune_rollback(save_run, capsys):
    run = str(save_run([1, 2, 3, 4]))
    assert _run(["checkpoints", "tag", run, "1", "best"]) == 0
    assert _run(["checkpoints", "prune", run, "--keep-last", "2"]) == 0
    assert "removed" in capsys.readouterr().out
    assert _run(["checkpoints", "list", run]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["STEP", "STATUS", "CREATED", "SIZE", "TAGS", "REASON"]
    assert [line.split()[:2] for line in lines[1:]] == [["1", "ok"], ["3", "ok"], ["4", "ok"]]
    assert lines[1].split()[5] == "best"
    assert _run(["rollback", run, "--to", "3"]) == 0
    assert "step_3" in capsys.readouterr().out
    assert _run(["checkpoints", "list", run, "--quick"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]] == ["1", "3"]
    (row,) = audit_rows(run)  # the rollback is audited; list/tag/prune are not control actions
    assert (row["action"], row["to_step"], row["via"]) == ("rollback", 3, "cli") and row["who"]


def test_user_errors_exit_2(save_run, tmp_path, capsys):
    run = str(save_run([1]))
    assert _run(["rollback", run, "--to", "9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("meshrl: error: no checkpoint for step 9") and "[1]" in err
    assert not (Path(run) / "audit.jsonl").exists()  # a refused action is not recorded
    assert _run(["checkpoints", "list", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_export_command(save_run, tmp_path, tokenizer_dir, capsys):
    """The run config names no real model here, so the tokenizer comes from --tokenizer."""
    run = str(save_run([1, 2]))
    out = tmp_path / "hf"
    assert _run(["export", run, str(out), "--step", "1", "--tokenizer", str(tokenizer_dir)]) == 0
    assert "exported step_1" in capsys.readouterr().out
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    (row,) = audit_rows(run)
    assert (row["action"], row["step"], row["path"]) == ("export", 1, str(out))


def audit_rows(run: str) -> list[dict]:
    return [json.loads(line) for line in (Path(run) / "audit.jsonl").read_text().splitlines()]


def test_table_formatting():
    rows = [
        CheckpointInfo(2, None, "ok", created="2026-01-01T00:00:00Z", size=2048, tags=["a", "b"]),
        CheckpointInfo(10, None, "corrupt", reason="checksum mismatch in x", size=5),
    ]
    assert format_table(rows).splitlines() == [
        "STEP  STATUS   CREATED               SIZE    TAGS  REASON",
        "2     ok       2026-01-01T00:00:00Z  2.0 KB  a,b   -",
        "10    corrupt  -                     5 B     -     checksum mismatch in x",
    ]
    assert human_size(3 * 1024**3) == "3.0 GB"


def test_convert_needs_the_trust_flag_then_signs_a_foreign_checkpoint(save_run, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MESHRL_CHECKPOINT_KEY_FILE", str(tmp_path / "theirs.key"))
    step_1 = save_run([1]) / "checkpoints" / "step_1"
    monkeypatch.setenv("MESHRL_CHECKPOINT_KEY_FILE", str(tmp_path / "mine.key"))
    assert _run(["checkpoints", "convert", str(step_1)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--i-trust-this-file" in err and not (tmp_path / "mine.key").exists()
    assert _run(["checkpoints", "convert", str(step_1), "--i-trust-this-file"]) == 0
    assert capsys.readouterr().out == f"signed {step_1} with your checkpoint key\n"
    assert _run(["checkpoints", "list", str(step_1.parent.parent)]) == 0
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()[1:]] == [["1", "ok"]]
