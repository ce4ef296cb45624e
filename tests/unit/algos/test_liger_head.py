"""`trainer.lm_head: liger` gives the same log-probs and gradients (hidden rows, weight, bias;
per-token upstream weights, a temperature, padding holes) as our chunked head. Liger's real
Triton kernels run on CPU under Triton's interpreter, in a subprocess (liger_worker.py)."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("liger_kernel")


def test_liger_head_matches_the_chunked_head():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "tests.unit.algos.liger_worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["plan"] == "liger"  # available under the interpreter
    assert result["liger_entropy_requires_grad"] is False  # entropy: detached, by contract
    assert result["logprob_scale"] > 1.0
    for name, diff in result["max_abs_diff"].items():
        assert diff < 1e-4, (name, result)
