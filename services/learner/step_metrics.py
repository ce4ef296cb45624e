"""The numbers the learner logs about each step besides the training step's own: what the
rollout produced (reward spread and components, lengths, truncation, staleness), where the
time went (generation / reward / reference busy time, waiting, the mesh's own overhead),
queue depths and the learner's memory.

The trainer's metrics (loss, KL, entropy, clip fractions, grad norm, lr...) come from the
learner core; these complete the metrics.jsonl row.
"""

from __future__ import annotations

import numpy as np
import psutil

from meshrl.api.common.v1 import common_pb2
from meshrl.episodes import model_token_count
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.codec import unpack_int32

OK = common_pb2.SCORE_STATUS_OK


def rollout_metrics(groups, *, version: int, trained_total: int) -> dict[str, float]:
    samples = [s for g in groups for s in g.samples]
    rewards = np.array([s.reward for s in samples], dtype=np.float64)
    lengths = np.array([model_token_count(s) for s in samples], dtype=np.float64)  # the model's tokens
    staleness = [version - 1 - g.policy_version for g in groups]
    out = {
        "weights_version": float(version),
        "staleness/mean": float(np.mean(staleness)) if staleness else 0.0,
        "reward/min": float(rewards.min(initial=np.inf)) if samples else 0.0,
        "reward/max": float(rewards.max(initial=-np.inf)) if samples else 0.0,
        "completions/max_length": float(lengths.max(initial=0)),
        "completions/clipped_ratio": float(
            np.mean([s.finish_reason == common_pb2.FINISH_REASON_LENGTH for s in samples])
        )
        if samples
        else 0.0,
        # every token the learner's forward reads, observations included
        "perf/tokens": float(
            sum(unpack_int32(s.response_token_ids).size for s in samples)
            + sum(unpack_int32(g.task.prompt_token_ids).size * len(g.samples) for g in groups)
        ),
        "groups/trained_total": float(trained_total),
    }
    out.update(component_metrics(samples))
    return out


def component_metrics(samples) -> dict[str, float]:
    """Mean raw value of each reward component over the samples it scored, and how many
    of its scores failed (error / timeout): a failed score is never averaged in as 0."""
    values: dict[str, list[float]] = {}
    failed: dict[str, int] = {}
    for s in samples:
        for c in s.reward_components:
            failed.setdefault(c.name, 0)
            if c.status == OK:
                values.setdefault(c.name, []).append(c.value)
            else:
                failed[c.name] += 1
    out = {f"reward/{name}": float(np.mean(v)) for name, v in values.items()}
    out.update({f"reward/{name}_failed": float(n) for name, n in failed.items()})
    return out


async def queue_depths(bus) -> dict[str, float]:
    """Messages waiting or in flight on each stage's queue, after the step's acks."""
    return {f"queue/{stage}": float(await bus.pending(stage)) for stage in names.STAGES}


def step_times(gathered, *, step_s: float, dropped) -> dict[str, float]:
    out = {
        "time/step": step_s,
        "time/wait_for_batch": gathered.wait_s,
        "memory/rss_bytes": float(psutil.Process().memory_info().rss),
    }
    out.update({f"groups/dropped_{k}": float(v) for k, v in dropped.items()})
    out.update(stage_times(gathered.groups))
    return out


def covered(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end] intervals: time when at least one was running."""
    total, end_so_far = 0.0, -np.inf
    for start, end in sorted(intervals):
        if end > end_so_far:
            total += end - max(start, end_so_far)
            end_so_far = end
    return total


def stage_times(groups) -> dict[str, float]:
    """Per stage (generate, reward, reference): mean time per group, and the wall time the
    stage was busy during the step (union over groups, which run concurrently)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for group in groups:
        for t in group.timings:
            spans.setdefault(t.stage, []).append((t.start_unix, t.end_unix))
    out = {f"time/{stage}": float(np.mean([e - s for s, e in v])) for stage, v in spans.items()}
    out.update({f"time/{stage}_busy": covered(v) for stage, v in spans.items()})
    out["time/services_busy"] = covered([iv for v in spans.values() for iv in v])
    return out


def with_derived(metrics: dict[str, float]) -> dict[str, float]:
    """Figures that need both the trainer's and the rollout's numbers: throughput, overhead."""
    step = metrics.get("time/step", 0.0)
    metrics["perf/throughput"] = metrics.get("perf/tokens", 0.0) / max(step, 1e-9)
    metrics["mesh/overhead_share"] = overhead_share(metrics)
    metrics["time/idle"] = metrics["mesh/overhead_share"] * step  # seconds no service nor the trainer worked
    return metrics


def overhead_share(metrics: dict[str, float]) -> float:
    """The mesh's own share of the step: everything but generation, reward, reference and
    training compute (queues, transport, weight push, bookkeeping)."""
    step = metrics.get("time/step", 0.0)
    compute = metrics.get("time/train", 0.0) + metrics.get("time/services_busy", 0.0)
    return max(0.0, step - compute) / step if step > 0 else 0.0


def step_line(step: int, total: int, metrics: dict[str, float]) -> str:
    """One log line per step, for a run no launcher's progress bar shows (compose, Kubernetes):
    `step 3/10: reward 0.625, 41.2 s (train 33.1 s, waited 8.0 s), policy v3` (+ held-out)."""

    def seconds(key: str) -> str:
        return f"{metrics[key]:.1f} s" if isinstance(metrics.get(key), (int, float)) else "-"

    reward = metrics.get("reward")
    line = (
        f"step {step + 1}/{total}: reward {'-' if reward is None else f'{reward:.3f}'}, {seconds('time/step')} "
        f"(train {seconds('time/train')}, waited {seconds('time/wait_for_batch')}), "
        f"policy v{int(metrics.get('weights_version', 0))}"
    )
    if isinstance(metrics.get("eval/accuracy"), (int, float)):
        line += f", held-out accuracy {metrics['eval/accuracy']:.3f}"
    return line
