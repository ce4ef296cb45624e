"""waterfall: tree order, bars and durations with hand-computed columns, group lookup errors."""

import argparse
import json

import pytest

from meshrl.cli.trace import add_subcommand, bar, cmd_trace, format_duration, render_waterfall, trace_for_group
from meshrl.telemetry.spans.read import TraceNotFound, group_ids, linking_spans, load_spans, tree_order

MS = 1_000_000
T = "a" * 32


def span(span_id, parent, name, service, start_ms, end_ms, *, trace=T, group=None, links=(), status="UNSET"):
    attrs = {"meshrl.group_id": group} if group else {}
    return {
        "trace_id": trace,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "kind": "INTERNAL",
        "service": service,
        "replica": "0",
        "start_unix_ns": 1_000 * MS + start_ms * MS,
        "end_unix_ns": 1_000 * MS + end_ms * MS,
        "attributes": attrs,
        "links": list(links),
        "events": [],
        "status": {"code": status, "description": "boom" if status == "ERROR" else None},
    }


GROUP = [  # deliberately out of order
    span("c", "b", "reward.score", "reward", 60, 90),
    span("a", None, "learner.publish_prompt", "learner", 0, 10, group="g-1"),
    span("d", "b", "reward.retry", "reward", 50, 55),
    span("b", "a", "rollout.generate", "rollout", 10, 50, group="g-1"),
    span("e", "c", "reference.logprobs", "reference", 90, 100),
]
STEP = span(
    "s",
    None,
    "learner.step",
    "learner",
    100,
    120,
    trace="b" * 32,
    links=[{"trace_id": T, "span_id": "e", "attributes": {}}],
)
STEP["attributes"]["meshrl.step"] = 4


def write_run(tmp_path, spans):
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "mixed-0.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans) + '{"cut mid-wr')
    return tmp_path


def test_format_duration():
    assert [format_duration(x) for x in (0, 420_000, 12_345_678, 1_234_000_000)] == [
        "0.0ms",
        "420µs",
        "12.3ms",
        "1.23s",
    ]


def test_bar_columns():
    # trace 0..100 ms on 20 columns: 10..50 ms → columns 2..9 (start 10/100*20=2, end 50/100*20=10)
    assert bar(10 * MS, 50 * MS, 0, 100 * MS, 20) == "  " + "█" * 8 + " " * 10
    # 0.1 ms span still gets one column; 99..100 ms is the last column
    assert bar(0, MS // 10, 0, 100 * MS, 20) == "█" + " " * 19
    assert bar(99 * MS, 100 * MS, 0, 100 * MS, 20) == " " * 19 + "█"
    assert bar(5, 5, 5, 0, 4) == "█   "  # zero-length trace


def test_tree_order_sorts_children_by_start_and_keeps_orphans():
    orphan = span("z", "lost", "reward.score", "reward", 95, 99)  # its parent never reached a file
    order = [(s["span_id"], s["depth"]) for s in tree_order([*GROUP, orphan])]
    assert order == [("a", 0), ("b", 1), ("d", 2), ("c", 2), ("e", 3), ("z", 0)]


def test_render_waterfall_exact_text():
    text = render_waterfall(GROUP, width=10, linked=[STEP])
    assert text.splitlines() == [
        f"trace {T} · 5 spans · 100.0ms",
        "    offset  duration  service      span",
        "    +0.0ms    10.0ms  learner-0    learner.publish_prompt    |█         |",
        "   +10.0ms    40.0ms  rollout-0      rollout.generate        | ████     |",
        "   +50.0ms     5.0ms  reward-0         reward.retry          |     █    |",
        "   +60.0ms    30.0ms  reward-0         reward.score          |      ███ |",
        "   +90.0ms    10.0ms  reference-0        reference.logprobs  |         █|",
        "linked from: learner-0 learner.step (meshrl.step=4) +100.0ms 20.0ms",
    ]


def test_render_marks_errors_and_separates_traces():
    other = span("x", None, "learner.publish_prompt", "learner", 0, 4, trace="c" * 32, status="ERROR")
    text = render_waterfall([GROUP[1], other], width=4)
    blocks = text.split("\n\n")
    assert len(blocks) == 2 and blocks[1].startswith("trace " + "c" * 32)
    assert blocks[1].splitlines()[-1].endswith("|████| ERROR boom")
    assert render_waterfall([]) == "(no spans)"


def test_trace_for_group_reads_files_and_finds_the_whole_trace(tmp_path):
    run = write_run(
        tmp_path,
        [*GROUP, STEP, span("q", None, "learner.publish_prompt", "learner", 200, 201, trace="d" * 32, group="g-2")],
    )
    spans = load_spans(run)
    assert len(spans) == 7  # the cut last line is skipped
    assert group_ids(spans) == ["g-1", "g-2"]
    tree = trace_for_group(run, "g-1")
    assert [s["span_id"] for s in tree] == ["a", "b", "d", "c", "e"]  # c, d, e carry no group id
    assert [s["span_id"] for s in linking_spans(spans, {T})] == ["s"]


def test_unknown_group_and_missing_dir_errors(tmp_path, capsys):
    run = write_run(tmp_path, GROUP)
    with pytest.raises(
        TraceNotFound, match=r"group 'g-9' has no spans in .*traces \(5 spans read\); known groups: g-1"
    ):
        trace_for_group(run, "g-9")
    with pytest.raises(FileNotFoundError, match="was the run traced"):
        load_spans(tmp_path / "nope")
    parser = argparse.ArgumentParser()
    add_subcommand(parser.add_subparsers())
    assert cmd_trace(parser.parse_args(["trace", str(tmp_path / "nope"), "g-1"])) == 2
    assert "meshrl trace: error:" in capsys.readouterr().err
    assert cmd_trace(parser.parse_args(["trace", str(run)])) == 0  # no group id: list them
    # no ledger here: the group is listed from its spans alone (with a ledger: tests/unit/run/test_summary.py)
    assert capsys.readouterr().out.splitlines()[1:] == ["g-1       -       -   100.0ms  traced only"]
