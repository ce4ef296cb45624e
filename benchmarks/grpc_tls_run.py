"""A whole PPO run on the tiny model (the mesh, the reference called each step), 4 steps, once
per mode named on the command line, in that order: wall time, each step's time/step and
time/reference (the learner's gRPC hop to the reference). Issue 23's end-to-end cost of
`launch.grpc_tls` (off / on / mutual); the per-call figures are benchmarks/grpc_tls_cost.py.

    nice .venv/bin/python -m benchmarks.grpc_tls_run off mutual
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from meshrl.config import load_config
from meshrl.inputs.data.arithmetic import arithmetic_rows
from meshrl.inputs.data.load import write_rows
from meshrl.inputs.models.tiny import build_tiny_model_dir
from meshrl.launch.local import run_local

top = Path(tempfile.mkdtemp())
model = build_tiny_model_dir(top / "model")
train = write_rows(top / "train.jsonl", arithmetic_rows(128, seed=0))
for i, mode in enumerate(sys.argv[1:]):
    run_dir = top / f"run-{i}-{mode}"
    cfg = load_config(
        base={
            "run": {"name": f"tls-{mode}", "dir": str(run_dir)},
            "model": {"path": str(model)},
            "data": {"train": str(train), "max_prompt_tokens": 128},
            "algorithm": {"preset": "ppo"},
            "rollout": {"sampling": {"group_size": 8, "max_tokens": 8}, "kv_cache_gb": 1.0, "max_model_len": 256},
            "reward": {
                "components": [{"name": "vowel", "kind": "regex", "weight": 1.0, "params": {"pattern": "[aeiou]"}}]
            },
            "learner": {"steps": 4, "prompts_per_step": 4},
            "trainer": {"micro_batch_size": 32, "optim": {"lr": 1e-3}},
            "launch": {"grpc_tls": mode},
        }
    )
    t0 = time.time()
    run_local(cfg, run_dir, progress=False, grace_s=10.0)
    wall = time.time() - t0
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r["time/step"] for r in rows if "time/step" in r]
    refs = [r.get("time/reference") for r in rows if r.get("time/reference") is not None]
    print(
        json.dumps(
            {
                "mode": mode,
                "wall_s": round(wall, 1),
                "steps": len(steps),
                "step_s_median": round(statistics.median(steps), 3),
                "step_s_all": [round(s, 3) for s in steps],
                "reference_s": [round(s, 4) for s in refs],
            }
        ),
        flush=True,
    )
