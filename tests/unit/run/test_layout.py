"""Every run-dir path goes through meshrl.run_layout: no other module of meshrl/, services/ or
gateway/ spells a run-dir file's name, and RunDir names each one where the docs say it is."""

import ast
from pathlib import Path

from meshrl import run_layout as layout
from meshrl.run_layout import RunDir

REPO = Path(__file__).resolve().parents[3]
FILES = {
    layout.CONFIG,
    layout.METRICS,
    layout.LEDGER,
    layout.DATA_REPORT,
    layout.SAMPLES,
    layout.ALERTS,
    layout.HEARTBEAT,
    layout.PRESENCE,
    layout.SCALE,
    layout.AUDIT,
    layout.RESTARTS,
    layout.SHM_SEGMENTS,
    layout.PLOT,
}
# the same names used for something else than a run dir's file
NOT_RUN_DIR = {("services/learner/trackers/mlflow_tracker.py", layout.CONFIG)}  # an MLflow artifact's name


def test_no_module_but_the_layout_spells_a_run_dir_file_name():
    found = []
    for root in ("meshrl", "services", "gateway"):
        for path in (REPO / root).rglob("*.py"):
            rel = str(path.relative_to(REPO))
            if rel == "meshrl/run_layout.py" or rel.startswith("meshrl/api/"):
                continue
            tree = ast.parse(path.read_text())
            docstrings = {
                id(n.body[0].value)
                for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.body
                and isinstance(n.body[0], ast.Expr)
            }
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and node.value in FILES
                    and id(node) not in docstrings
                    and (rel, node.value) not in NOT_RUN_DIR
                ):
                    found.append(f"{rel}:{node.lineno} {node.value!r}")
    assert found == []


def test_run_dir_names_every_entry_in_the_run_dir():
    run = RunDir("/runs/x")
    assert (run.config, run.metrics, run.ledger, run.audit) == tuple(
        Path("/runs/x", name) for name in ("config.yaml", "metrics.jsonl", "groups.jsonl", "audit.jsonl")
    )
    assert run.log("learner-0") == Path("/runs/x/logs/learner-0.log")
    assert run.checkpoints == Path("/runs/x/checkpoints") and run / "extra" == Path("/runs/x/extra")
