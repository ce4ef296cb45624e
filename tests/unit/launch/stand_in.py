"""The ending every launcher stand-in service shares (a helper for the run_local tests with
stand-ins: test_run_secrets, test_run_nats_tls, test_run_grpc_tls; not a test): append this
stand-in's `record` to the records file; a non-learner then sleeps until stopped; the
learner waits for all four records (it ends the run), then writes the one metrics row the
launcher's progress needs. Appended to each stand-in's own code, which defines `kind`,
`records` (the records file), `record` (a JSON-able dict) and `run_dir`. Also the small GRPO
run config these tests launch (`stand_in_config`).
"""

from meshrl.config.load import load_config


def stand_in_config(steps: int = 1, **sections):
    """A GRPO run of `steps` steps with placeholder model and data paths (stand-ins read neither)."""
    base = {"run": {"name": "t"}, "model": {"path": "/m"}, "data": {"train": "/d"}, "algorithm": {"preset": "grpo"}}
    return load_config(base={**base, "learner": {"steps": steps}, **sections})


ENDING = """
import json as _json, time as _time
with open(records, "a") as f:
    f.write(_json.dumps(record) + "\\n")
if kind != "learner":
    _time.sleep(600)
deadline = _time.monotonic() + 60  # the learner ends the run: not before every record is in
while len(open(records).read().splitlines()) < 4 and _time.monotonic() < deadline:
    _time.sleep(0.1)
with open(os.path.join(run_dir, "metrics.jsonl"), "a") as f:
    f.write(_json.dumps({"step": 0, "reward": 1.0}) + "\\n")
"""
