"""`meshrl data arithmetic|pairs`: thin wrappers that write rows the loaders read."""

import json
import re

from meshrl.cli.main import main


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_arithmetic_writes_verl_rows(tmp_path, capsys):
    out = tmp_path / "sub" / "train.jsonl"
    assert main(["data", "arithmetic", "--out", str(out), "--n", "5", "--seed", "3"]) == 0
    assert f"wrote 5 rows to {out}" in capsys.readouterr().out
    got = rows(out)
    assert len(got) == 5
    for row in got:
        match = re.search(r"What is (\d+)\+(\d+)\?", row["prompt"][0]["content"])
        assert row["reward_model"]["ground_truth"] == str(int(match[1]) + int(match[2]))


def test_pairs_write_chosen_and_rejected(tmp_path):
    out = tmp_path / "pairs.jsonl"
    assert main(["data", "pairs", "--out", str(out), "--n", "4", "--digits", "2"]) == 0
    got = rows(out)
    assert len(got) == 4 and all({"prompt", "chosen", "rejected"} <= set(r) for r in got)
    assert all(r["chosen"] != r["rejected"] for r in got)


def test_same_seed_same_rows(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (a, b):
        main(["data", "arithmetic", "--out", str(path), "--n", "8", "--seed", "1"])
    assert a.read_text() == b.read_text()


def test_bad_ops_exit_2(tmp_path, capsys):
    rc = main(["data", "arithmetic", "--out", str(tmp_path / "x.jsonl"), "--n", "3", "--ops", "^"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("meshrl: error:") and "ops='^'" in err


def test_arithmetic_tool_rows_offer_the_calculator(tmp_path):
    out = tmp_path / "tool.jsonl"
    assert main(["data", "arithmetic", "--tool", "--out", str(out), "--n", "4", "--digits", "3", "--ops", "*"]) == 0
    for row in rows(out):
        match = re.fullmatch(
            r"What is (\d{3})\*(\d{3})\? You may use the calculator tool\. Answer with a number\.",
            row["prompt"][0]["content"],
        )
        assert row["reward_model"]["ground_truth"] == str(int(match[1]) * int(match[2]))
        assert row["data_source"] == "tool_arith"


def test_out_of_range_sizes_are_one_line_exit_2(tmp_path, capsys):
    """`--n 10**12` tried to allocate 14.6 TiB (a numpy traceback); `--digits 100000` overflowed int64."""
    out = str(tmp_path / "x.jsonl")
    for flags, expected in (
        (["--n", str(10**12)], "--n 1000000000000: give 1..1,000,000 rows"),
        (["--n", "0"], "--n 0: give 1..1,000,000 rows"),
        (["--n", "3", "--digits", "100000"], "--digits 100000: give 1..9 digits per operand"),
        (["--n", "3", "--seed", "-1"], "--seed -1: give a seed >= 0"),
    ):
        assert main(["data", "arithmetic", "--out", out, *flags]) == 2
        err = capsys.readouterr().err
        assert err == f"meshrl: error: {expected}" + err.partition(expected)[2] and err.count("\n") == 1, err
    assert not (tmp_path / "x.jsonl").exists()
