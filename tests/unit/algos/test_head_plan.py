"""The LM head's plan (meshrl/algos/head_plan.py): chunk size from the device and a memory
budget, the kernel chosen or refused with a message naming why, and the bytes-per-logit
constant the CUDA budget divides by, measured here with torch's MemTracker."""

import importlib.metadata

import pytest
import torch
from torch.distributed._tools.mem_tracker import MemTracker

from meshrl.algos import head_plan, liger_head
from meshrl.algos.head_plan import BYTES_PER_LOGIT, CPU_CHUNK_ELEMENTS, chunk_elements_for, plan_head
from meshrl.algos.logprobs import head_logprobs

GB = 10**9


def test_chunk_from_the_device_and_the_memory_budget():
    assert chunk_elements_for("cpu") == CPU_CHUNK_ELEMENTS == 1 << 22
    # an H200 with 100 GB free, 10 % for the head: 10 GB / 20 B per logit
    assert chunk_elements_for("cuda", 0.1, free_bytes=100 * GB) == 500_000_000
    assert chunk_elements_for("cuda", 0.05, free_bytes=100 * GB) == 250_000_000
    # never below the CPU's chunk, however little is free
    assert chunk_elements_for("cuda", 0.1, free_bytes=GB // 100) == CPU_CHUNK_ELEMENTS


def test_plan_auto_is_chunked_with_the_device_chunk_or_the_set_one():
    plan = plan_head("auto", "auto", 0.1, "cuda", free_bytes=100 * GB)
    assert (plan.kernel, plan.chunk_elements) == ("chunked", 500_000_000)
    assert plan_head("chunked", 1234, 0.1, "cpu").chunk_elements == 1234
    with pytest.raises(ValueError, match="at least 1 logit"):
        plan_head("auto", 0, 0.1, "cpu")
    with pytest.raises(ValueError, match="trainer.lm_head='fused'"):
        plan_head("fused", "auto", 0.1, "cpu")


def test_liger_on_cpu_is_refused_naming_the_fix(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="Triton GPU kernel and the learner runs on cpu.*lm_head=chunked"):
        plan_head("liger", "auto", 0.1, "cpu")


@pytest.mark.parametrize(
    "installed, message",
    [
        (None, r"not installed: pip install 'liger-kernel>=0.8.2'"),
        ("0.8.1", r"0.8.1 computes wrong weight gradients .*#1298"),
    ],
)
def test_liger_missing_or_too_old_is_refused(monkeypatch, installed, message):
    def version(name):
        if installed is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(liger_head.importlib.metadata, "version", version)
    with pytest.raises(ValueError, match=message):
        plan_head("liger", "auto", 0.1, "cuda", free_bytes=GB)


def test_liger_with_an_entropy_bonus_is_refused(monkeypatch):
    monkeypatch.setattr(liger_head.importlib.metadata, "version", lambda name: "0.8.5")
    assert plan_head("liger", "auto", 0.1, "cuda", free_bytes=GB).kernel == "liger"
    with pytest.raises(ValueError, match="entropy_coeff is not 0"):
        plan_head("liger", "auto", 0.1, "cuda", entropy_in_loss=True, free_bytes=GB)


@pytest.mark.parametrize("autocast", [False, True])
def test_one_chunks_peak_memory_per_logit_is_within_the_budgets_constant(autocast):
    """Forward + backward of one checkpointed chunk (entropy too) holds at most
    BYTES_PER_LOGIT bytes per logit beyond the weights, hidden rows and their gradients."""
    rows, hidden_size, vocab = 256, 32, 4096
    head = torch.nn.Linear(hidden_size, vocab, bias=False)
    hidden = torch.randn(1, rows, hidden_size, requires_grad=True)
    ids, mask = torch.randint(0, vocab, (1, rows)), torch.ones(1, rows)
    tracker = MemTracker()
    tracker.track_external(head, hidden)
    with tracker:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logprob, entropy, _ = head_logprobs(head, hidden, ids, mask, with_entropy=True, chunk_elements=rows * vocab)
        (logprob.sum() + entropy.sum()).backward()
    peak = tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]
    fixed = 2 * head.weight.numel() * 4 + 2 * hidden.numel() * 4 + 2 * head.weight.numel() * 2
    per_logit = (peak - fixed) / (rows * vocab)
    assert 8 < per_logit <= BYTES_PER_LOGIT, per_logit
    assert head_plan.BYTES_PER_LOGIT == 20
