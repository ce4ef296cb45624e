"""Which curves the run plot draws, as data: one `Panel` per small chart.

Names are the learner's metrics.jsonl keys (TRL/verl names). A panel is drawn when at least
one of its keys has a finite value; add a panel by adding an entry to `PANELS`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Panel:
    title: str
    lines: tuple[str, ...] = ()
    band: tuple[str, str] | None = None  # (mean key, std key): shaded mean ± std
    stacked: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (label, keys summed) bottom-up
    ylabel: str = ""

    def keys(self) -> tuple[str, ...]:
        stacked = tuple(k for _, keys in self.stacked for k in keys)
        return self.lines + (self.band or ()) + stacked


# Disjoint parts of a step, as the learner logs them: wall time each service stage was busy
# (generation runs inside the learner's wait, so the wait itself is not stacked), training,
# and the weight push. The `time/step` line on top shows what the mesh adds beyond them.
STEP_TIME = (
    ("generate", ("time/generate_busy",)),
    ("reward", ("time/reward_busy",)),
    ("reference", ("time/reference_busy",)),
    ("train", ("time/train",)),
    ("weight push", ("time/weights_serialise", "time/weights_push")),
)

PANELS = (
    Panel("reward (mean ± std)", lines=("reward",), band=("reward", "reward_std")),
    Panel("KL to reference", lines=("kl",)),
    Panel("entropy", lines=("entropy",), ylabel="nats/token"),
    Panel("loss", lines=("loss", "pg_loss")),
    Panel("grad norm", lines=("grad_norm",)),
    Panel("response length", lines=("completions/mean_length", "completions/max_length"), ylabel="tokens"),
    Panel("truncated (hit max_tokens)", lines=("completions/clipped_ratio",), ylabel="fraction"),
    Panel("clip fraction", lines=("clip_ratio/low", "clip_ratio/high", "clip_ratio"), ylabel="fraction of tokens"),
    Panel("step time split", lines=("time/step",), stacked=STEP_TIME, ylabel="s"),
    Panel("throughput", lines=("perf/throughput",), ylabel="tokens/s"),
    Panel("learning rate", lines=("lr",)),
    Panel("staleness", lines=("staleness/mean",), ylabel="policy versions"),
    Panel("held-out eval (greedy)", lines=("eval_start/accuracy", "eval/accuracy", "eval/pass@4"), ylabel="accuracy"),
)
