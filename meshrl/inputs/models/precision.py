"""`precision: auto`: train (and roll out) in bf16 only where this host runs it faster.

CPUs differ: with AVX512-BF16 / AMX-BF16, bf16 matmuls run faster than fp32 and so does a
whole training step; on a CPU without them autocast's bf16 kernels fall back to slow paths,
an order of magnitude slower (docs/benchmarks.md, "Training step"). So `auto` reads the
CPU's flags (/proc/cpuinfo) and, if they are present, runs a short probe — a Linear layer's
forward and backward, fp32 vs bf16 autocast — and picks bf16 only if the probe is at least
`MIN_SPEEDUP` faster. The choice and its figures are logged by the caller. Master weights
and optimizer state stay fp32 either way (bf16 is autocast only).

On CUDA, `auto` is bf16 where the device supports it.

Simplifications: the probe is one short timing of one layer shape (SmolLM2's MLP: 576 ->
1536); a busy machine can blur it, hence the margin. Run
`python -m meshrl.inputs.models.precision` to see this host's choice.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path

import torch

BF16_FLAGS = ("avx512_bf16", "amx_bf16")
MIN_SPEEDUP = 1.3  # bf16 must beat fp32 by this factor on the probe


@dataclass(frozen=True)
class PrecisionChoice:
    dtype: str  # "bf16" or "fp32"
    reason: str

    @property
    def bf16(self) -> bool:
        return self.dtype == "bf16"

    @property
    def torch_dtype(self) -> str:
        """The name vLLM / transformers take (`model.dtype`) for rollout at this precision."""
        return "bfloat16" if self.bf16 else "float32"


def cpu_bf16_flags(cpuinfo: str | None = None) -> list[str]:
    """Which of BF16_FLAGS the CPU reports (reads /proc/cpuinfo unless text is given)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text() if path.exists() else ""
    words = set(cpuinfo.split())
    return [flag for flag in BF16_FLAGS if flag in words]


def _linear_pass_s(layer: torch.nn.Linear, x: torch.Tensor, bf16: bool) -> float:
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        y = layer(x)
    y.float().sum().backward()
    return time.perf_counter() - start


def probe_gflops(rows: int = 512, d_in: int = 576, d_out: int = 1536, repeats: int = 7) -> tuple[float, float]:
    """(fp32, bf16-autocast) GFLOP/s of a Linear forward + backward, best of `repeats` each.

    The two are timed in alternation, round by round, so that a load that comes and goes
    (the other services of a run start at the same moment) hits both alike; timed one after
    the other, a burst can make bf16 look slower on a host where it is several times faster."""
    layer = torch.nn.Linear(d_in, d_out, bias=False)
    x = torch.randn(rows, d_in, requires_grad=True)
    best = {False: float("inf"), True: float("inf")}
    for bf16 in (False, True):  # warm-up: kernels and allocations
        _linear_pass_s(layer, x, bf16)
    for _ in range(repeats):
        for bf16 in (False, True):
            best[bf16] = min(best[bf16], _linear_pass_s(layer, x, bf16))
    flops = 3 * 2 * rows * d_in * d_out  # forward + two backward matmuls
    return flops / best[False] / 1e9, flops / best[True] / 1e9


def choose(flags: list[str], fp32_gflops: float | None, bf16_gflops: float | None) -> PrecisionChoice:
    """The decision from the flags and probe figures (kept apart so tests can feed fakes)."""
    if not flags:
        return PrecisionChoice("fp32", f"CPU reports none of {', '.join(BF16_FLAGS)}")
    speedup = bf16_gflops / fp32_gflops
    figures = (
        f"probe fp32 {fp32_gflops:.0f} vs bf16 {bf16_gflops:.0f} GFLOP/s ({speedup:.2f}x), flags {', '.join(flags)}"
    )
    if speedup >= MIN_SPEEDUP:
        return PrecisionChoice("bf16", figures)
    return PrecisionChoice("fp32", f"{figures}: below the {MIN_SPEEDUP}x needed for bf16")


@functools.lru_cache(maxsize=None)
def probe_host() -> PrecisionChoice:
    """`choose` on this CPU (the probe runs only when the flags are there; once per process)."""
    flags = cpu_bf16_flags()
    if not flags:
        return choose(flags, None, None)
    return choose(flags, *probe_gflops())


def resolve_precision(setting: str, *, bf16: bool = False, device: torch.device | str = "cpu") -> PrecisionChoice:
    """`trainer.precision` (auto | fp32 | bf16; the legacy `trainer.bf16=true` forces bf16)."""
    if bf16 or setting == "bf16":
        return PrecisionChoice("bf16", "configured (trainer.precision=bf16 or trainer.bf16=true)")
    if setting == "fp32":
        return PrecisionChoice("fp32", "configured (trainer.precision=fp32)")
    if setting != "auto":
        raise ValueError(f"trainer.precision={setting!r}: choose auto, fp32 or bf16")
    if torch.device(device).type == "cuda":
        ok = torch.cuda.is_bf16_supported()
        return PrecisionChoice("bf16" if ok else "fp32", f"CUDA bf16 supported: {ok}")
    return probe_host()


def resolve_model_dtype(setting: str, *, device: torch.device | str = "cpu") -> tuple[str, str]:
    """`model.dtype` (auto | float32 | bfloat16) for rollout and reference: the dtype name
    vLLM / transformers take, and why. `auto` is this host's `precision: auto` choice, so the
    services that only run the model forward use the precision the learner trains in."""
    if setting in ("float32", "bfloat16"):
        return setting, f"configured (model.dtype={setting})"
    if setting != "auto":
        raise ValueError(f"model.dtype={setting!r}: choose auto, float32 or bfloat16")
    choice = resolve_precision("auto", device=device)
    return choice.torch_dtype, f"model.dtype=auto: {choice.reason}"


if __name__ == "__main__":
    choice = probe_host()
    print(f"precision auto -> {choice.dtype}: {choice.reason}")
