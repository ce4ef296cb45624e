"""`meshrl trace RUN_DIR_OR_URL GROUP_ID`: one prompt group's trace as a text waterfall.

    $ meshrl trace runs/x g-0007
    trace 4bf9...4736 · 5 spans · 120.0 ms
       offset  duration  service     span
       +0.0ms    10.0ms  learner-0   learner.publish_prompt    |███                 |
      +10.0ms    50.0ms  rollout-0     rollout.generate        |   ████████████     |
      ...
    linked from: learner-0 learner.step (meshrl.step=3) +110.0ms 10.0ms

Offsets are from the trace's first span; bars place each span on the trace's time axis
(`width` columns). Spans come from RUN_DIR/traces/*.jsonl (OTLP JSON, spans/export.py),
which are written with or without an OTLP collector. Without GROUP_ID the command lists the
run's groups, one a line, with what the ledger says (step trained at, mean reward, or why it
was dropped) and how long its trace took (meshrl.run.groups):

    GROUP  STEP  REWARD  DURATION  STATE
    g-1       0   0.500   120.0ms  trained
    g-2       -       -    30.0ms  dropped: stale

With a gateway run URL (http://HOST:PORT/runs/NAME, a viewer token in $MESHRL_GATEWAY_TOKEN)
the spans come from the gateway's GetGroupTrace (meshrl/run/remote.py) and GROUP_ID is needed.
"""

from __future__ import annotations

import math
import os
import sys
from collections import defaultdict

from meshrl.cli import about
from meshrl.run.groups import group_rows
from meshrl.run.remote import group_trace, is_url
from meshrl.run_layout import RunDir
from meshrl.telemetry.spans.read import TraceNotFound, linking_spans, load_spans, trace_for_group, tree_order

BAR = "█"
DEFAULT_WIDTH = 40

__all__ = ["trace_for_group", "render_waterfall", "cmd_trace", "add_subcommand", "format_duration"]


def format_duration(ns: float) -> str:
    """12_345_678 ns → '12.3ms'; below 1 ms → '420µs'; ≥ 1 s → '1.23s'."""
    ms = ns / 1e6
    if 0 < ms < 1:
        return f"{ns / 1e3:.0f}µs"
    return f"{ms:.1f}ms" if ms < 1000 else f"{ms / 1000:.2f}s"


def bar(start_ns: int, end_ns: int, t0: int, total_ns: int, width: int) -> str:
    """`width` columns with the span's [start, end) drawn; at least one column."""
    if total_ns <= 0:
        return BAR + " " * (width - 1)
    first = min(int((start_ns - t0) / total_ns * width), width - 1)
    last = min(max(first + 1, math.ceil((end_ns - t0) / total_ns * width)), width)
    return " " * first + BAR * (last - first) + " " * (width - last)


def _label(span: dict) -> str:
    return f"{span['service']}-{span['replica']}" if span.get("replica") else span.get("service", "?")


def _by_trace(spans: list[dict]) -> dict[str, list[dict]]:
    traces: dict[str, list[dict]] = defaultdict(list)
    for s in spans:
        traces[s["trace_id"]].append(s)
    return traces


def _render_trace(spans: list[dict], width: int, linked: list[dict]) -> list[str]:
    t0 = min(s["start_unix_ns"] for s in spans)
    t1 = max(s["end_unix_ns"] for s in spans)
    svc_w = max(len("service"), *(len(_label(s)) for s in spans))
    name_w = max(len("span"), *(2 * s["depth"] + len(s["name"]) for s in spans))
    lines = [
        f"trace {spans[0]['trace_id']} · {len(spans)} spans · {format_duration(t1 - t0)}",
        f"{'offset':>10}  {'duration':>8}  {'service':<{svc_w}}  span",
    ]
    for s in spans:
        name = "  " * s["depth"] + s["name"]
        status = s.get("status", {})
        error = f" ERROR {status.get('description') or ''}".rstrip() if status.get("code") == "ERROR" else ""
        lines.append(
            f"{'+' + format_duration(s['start_unix_ns'] - t0):>10}  "
            f"{format_duration(s['end_unix_ns'] - s['start_unix_ns']):>8}  {_label(s):<{svc_w}}  "
            f"{name:<{name_w}}  |{bar(s['start_unix_ns'], s['end_unix_ns'], t0, t1 - t0, width)}|{error}"
        )
    for s in linked:
        step = s.get("attributes", {}).get("meshrl.step")
        lines.append(
            f"linked from: {_label(s)} {s['name']}"
            + (f" (meshrl.step={step})" if step is not None else "")
            + f" +{format_duration(s['start_unix_ns'] - t0)} {format_duration(s['end_unix_ns'] - s['start_unix_ns'])}"
        )
    return lines


def render_waterfall(spans: list[dict], *, width: int = DEFAULT_WIDTH, linked: list[dict] = ()) -> str:
    """Indented span tree per trace with offset, duration, service and a time bar.

    `spans` may come in any order (they are put in tree order); `linked` are spans of other
    traces that link here (e.g. the learner's step), listed under the trace they link to.
    """
    if not spans:
        return "(no spans)"
    blocks = []
    for trace_id, members in _by_trace(spans).items():
        ordered = members if all("depth" in s for s in members) else tree_order(members)
        here = [s for s in linked if any(link["trace_id"] == trace_id for link in s.get("links", []))]
        blocks.append("\n".join(_render_trace(ordered, width, here)))
    return "\n\n".join(blocks)


def group_table(rows: list[dict]) -> str:
    """The groups as aligned columns: GROUP, STEP, REWARD, DURATION, STATE ('-' where unknown)."""
    cells = [("GROUP", "STEP", "REWARD", "DURATION", "STATE")] + [
        (
            r["group_id"],
            "-" if r["step"] is None else str(r["step"]),
            "-" if not isinstance(r["reward"], (int, float)) else f"{r['reward']:.3f}",
            "-" if r["duration_ns"] is None else format_duration(r["duration_ns"]),
            r["state"],
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(4)]
    return "\n".join(
        f"{a:<{widths[0]}}  {b:>{widths[1]}}  {c:>{widths[2]}}  {d:>{widths[3]}}  {e}" for a, b, c, d, e in cells
    )


def list_groups(run_dir: str) -> int:
    """Print the run's groups (ledger and traces); exit 2 when neither is there."""
    traces = RunDir(run_dir).traces
    spans = load_spans(run_dir) if traces.is_dir() else []
    rows = group_rows(run_dir, spans)
    if not rows:
        if not traces.is_dir():
            raise FileNotFoundError(f"{run_dir} holds neither a ledger nor traces: pass a run dir")
        print(f"no groups in {run_dir} (no ledger rows, no traced groups in {traces})")
        return 0
    try:
        print(group_table(rows))
    except BrokenPipeError:  # `meshrl trace RUN | head`: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # so the exit's flush does not raise again
    return 0


def trace_from_gateway(args) -> int:
    """Print GROUP_ID's waterfall as the gateway at the run URL reads it (errors: LaunchError)."""
    if not args.group_id:
        print(
            "meshrl trace: error: give a GROUP_ID with a URL (the dashboard's samples name each "
            "sample's group), or pass the run dir to list its traced groups",
            file=sys.stderr,
        )
        return 2
    tree, linked = group_trace(args.run_dir, args.group_id)
    print(render_waterfall(tree, width=args.width, linked=linked))
    return 0


def cmd_trace(args) -> int:
    """Print GROUP_ID's waterfall (exit 0), the traced groups when no id is given, or an error (2)."""
    if is_url(args.run_dir):
        return trace_from_gateway(args)
    try:
        if not args.group_id:
            return list_groups(args.run_dir)
        spans = load_spans(args.run_dir)
        tree = trace_for_group(args.run_dir, args.group_id, spans=spans)
    except (FileNotFoundError, TraceNotFound) as err:
        print(f"meshrl trace: error: {err}", file=sys.stderr)
        return 2
    linked = linking_spans(spans, {s["trace_id"] for s in tree})
    print(render_waterfall(tree, width=args.width, linked=linked))
    return 0


def add_subcommand(subparsers) -> None:
    """Register `meshrl trace RUN_DIR_OR_URL [GROUP_ID] [--width N]` on an argparse subparsers object."""
    p = subparsers.add_parser("trace", help=about("trace"))
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR_OR_URL",
        help="the run directory (holds traces/*.jsonl), or a "
        "gateway run URL http://HOST:PORT/runs/NAME (viewer token in $MESHRL_GATEWAY_TOKEN)",
    )
    p.add_argument(
        "group_id", nargs="?", help="the group to show; leave out to list the groups with step, reward and duration"
    )
    p.add_argument("--width", type=int, default=DEFAULT_WIDTH, help="columns of the time bars")
    p.set_defaults(func=cmd_trace)


add_parser = add_subcommand  # the name meshrl.cli.main's SUBCOMMANDS loop calls
