"""benchmarks/gpu_train_step.py runs on CPU with --tiny (what a GPU run does, in a minute),
with gRPC, NATS, vLLM and the telemetry packages unimportable (a GPU host with torch and
transformers only): the floor, meshrl's step and a lever each give a time and the step's
split, a lever that cannot run here says why, the export and step-with-push figures come
out, everything lands in the JSON; the useful-FLOPs count is the hand-computed one. No
timing is asserted."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import gpu_train_step as bench
from meshrl.algos.batch import RolloutBatch

ROOT = Path(__file__).resolve().parents[3]


# what a GPU host without meshrl's service stack lacks: the benchmark must not need them
NOT_ON_A_BARE_GPU_HOST = [
    "grpc",
    "nats",
    "vllm",
    "aiohttp",
    "opentelemetry",
    "prometheus_client",
    "psutil",
    "mlflow",
    "wandb",
]
RUN = """import sys
for name in {blocked!r}:
    sys.modules[name] = None  # importing it raises ImportError
from benchmarks.gpu_train_step import main
main({argv!r})
"""


def test_tiny_run_reports_every_figure_without_the_service_stack(tmp_path):
    out_path = tmp_path / "gpu.json"
    argv = ["--tiny", "--variants", "floor,meshrl,packed,liger", "--json", str(out_path)]
    code = RUN.format(blocked=NOT_ON_A_BARE_GPU_HOST, argv=argv)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=600, cwd=ROOT)
    out = json.loads(out_path.read_text())
    rows = {row["variant"]: row for row in out["variants"]}
    assert rows["floor"]["vs_floor"] == pytest.approx(1.0)
    for name in ("meshrl", "packed"):
        assert rows[name]["seconds"] > 0 and rows[name]["vs_floor"] > 0
        assert {"forward", "backward", "optimizer"} <= set(rows[name]["split"])
        assert rows[name]["mfu"] is None and rows[name]["peak_gb"] is None  # CPU: no peak known
    assert "Triton GPU kernel" in rows["liger"]["skipped"]
    assert out["tokens"] > 0 and out["useful_tflop"] > 0
    assert {
        "foreground_sha256_s",
        "foreground_blake3_s",
        "background_stage_s",
        "background_write_blake3_s",
        "collective_snapshot_s",
        "file_gb",
    } <= set(out["export"])
    assert {"step_push_none_s", "step_push_foreground_s", "step_push_background_s"} == set(out["push"])


def test_useful_flops_hand_computed():
    """tiny: hidden 64, 2 layers, 4 heads / 2 KV heads (KV width 32), intermediate 128, vocab
    512; one row of 3 prompt + 2 response tokens. Per layer 2·64·64 + 2·64·32 + 3·64·128 =
    36,864 matmul parameters: 6·36,864·2 layers·5 tokens = 2,211,840; the head on the 2
    response tokens 6·512·64·2 = 393,216; attention 6·2·64·5² = 19,200."""
    batch = RolloutBatch.from_sequences(
        [np.array([1, 2, 3])], [np.array([4, 5])], rewards=[0.0], group_ids=[0], pad_id=0
    )
    assert bench.useful_flops("tiny", batch) == 2_211_840 + 393_216 + 19_200


def test_unknown_variants_are_refused():
    with pytest.raises(SystemExit):
        bench.parse(["--variants", "floor,warp"])
