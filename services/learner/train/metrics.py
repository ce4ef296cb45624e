"""Step metrics gathered without a host sync per micro-batch, reduced once across ranks.

Three kinds of entries:

- weighted means (`mean`): Σ value·weight / Σ weight — token fractions such as
  `clip_ratio/high` are weighted by each micro-batch's valid tokens, so the result is the
  fraction over the whole batch on every rank count;
- totals (`total`): summed over micro-batches and ranks (the loss share numerator/denominator
  of each micro-batch adds up to the mini-batch loss), divided by `updates` at the end;
- extremes (`extreme`; a loss's metrics ending in `/min` or `/max`): min or max over everything.

`Timer` sums wall time per phase (`time/forward`, ...), synchronising CUDA first so GPU
work is attributed to the phase that launched it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager

import torch
import torch.distributed as dist

from meshrl.services.learner.train.fsdp import DistContext


class MetricSums:
    """Accumulates metric tensors; `reduce` turns them into floats (one all-reduce per kind)."""

    def __init__(self):
        self._means: dict[str, list] = defaultdict(lambda: [0.0, 0.0])
        self._totals: dict[str, torch.Tensor | float] = defaultdict(float)
        self._mins: dict[str, torch.Tensor] = {}
        self._maxs: dict[str, torch.Tensor] = {}

    def mean(self, name: str, value, weight) -> None:
        entry = self._means[name]
        entry[0] = entry[0] + value.detach().float() * weight if torch.is_tensor(value) else entry[0] + value * weight
        entry[1] = entry[1] + weight

    def total(self, name: str, value) -> None:
        self._totals[name] = self._totals[name] + (value.detach().float() if torch.is_tensor(value) else value)

    def extreme(self, name: str, value: torch.Tensor, kind: str) -> None:
        """Keep the smallest (`kind="min"`) or largest (`"max"`) value seen under `name`."""
        table, pick = (self._mins, torch.minimum) if kind == "min" else (self._maxs, torch.maximum)
        value = value.detach().float()
        table[name] = pick(table[name], value) if name in table else value

    def add_dict(self, metrics: dict, weight) -> None:
        """Route a loss's metric dict: `/min`, `/max` to extremes, the rest to weighted means."""
        for name, value in metrics.items():
            if name.endswith(("/min", "/max")):
                self.extreme(name, value, name.rsplit("/", 1)[1])
            else:
                self.mean(name, value, weight)

    def reduce(self, ctx: DistContext, updates: int = 1) -> dict[str, float]:
        out: dict[str, float] = {}
        names = sorted(self._means)
        if names:
            flat = on_device([self._means[n][i] for n in names for i in (0, 1)], ctx.device)
            flat = ctx.all_reduce(flat).cpu()
            out.update({n: float(flat[2 * k] / flat[2 * k + 1].clamp_min(1e-12)) for k, n in enumerate(names)})
        out.update(self._reduce_simple(ctx, self._totals, dist.ReduceOp.SUM, scale=1.0 / max(updates, 1)))
        out.update(self._reduce_simple(ctx, self._mins, dist.ReduceOp.MIN))
        out.update(self._reduce_simple(ctx, self._maxs, dist.ReduceOp.MAX))
        return out

    @staticmethod
    def _reduce_simple(ctx, table, op, scale: float = 1.0) -> dict[str, float]:
        names = sorted(table)
        if not names:
            return {}
        flat = ctx.all_reduce(on_device([table[n] for n in names], ctx.device), op=op).cpu() * scale
        return dict(zip(names, flat.tolist()))


def on_device(values: list, device: torch.device) -> torch.Tensor:
    """float32 [len(values)] on `device` from a mix of Python numbers and 0-dim tensors (which
    may sit on the device: every element is placed there before stacking)."""
    return torch.stack([torch.as_tensor(v, dtype=torch.float32, device=device).reshape(()) for v in values])


class Timer:
    """Wall seconds per phase, accumulated: `with timer("forward"): ...`."""

    def __init__(self, device: torch.device):
        self.device = device
        self.seconds: dict[str, float] = defaultdict(float)

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextmanager
    def __call__(self, phase: str):
        self._sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            self._sync()
            self.seconds[phase] += time.perf_counter() - start

    def as_metrics(self) -> dict[str, float]:
        return {f"time/{k}": v for k, v in self.seconds.items()}
