"""What the learner's loop needs from each collaborator, as Protocols.

The loop (loop.py) is written against these, not against the classes that implement them, so a
test can hand it a small fake and a reader sees at a glance what each part must do:

    TrainStep        train/step.py TrainStep            (batch, step) -> metrics
    WeightsExport    build.rollout_weights(...)         () -> state dict for the rollout engines
    WeightsPush      weights.WeightsPublisher / CollectivePublisher   publish(state dict, version) -> figures
    CheckpointStore  checkpointing.LearnerCheckpoints   save / path_of / tag / restore_if_any
    AlertJudge       meshrl.alerts.AlertEngine      observe(step, metrics) -> alerts
    StepEvaluation   evaluation.LearnerEval / NoEval    samples every step, held-out eval every N
    HealthProbe      health_watch.HealthWatch           probes the services in the background

and the offline (DPO) loop (offline.py), which also takes a CheckpointStore:

    PreferencePairs  inputs/data PreferenceDataset      next_batch(k), a resumable cursor
    PreferenceStep   train/dpo.py DPOStep               (PreferenceBatch, step) -> metrics
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from meshrl.algos.batch import PreferenceBatch
from meshrl.api.common.v1 import common_pb2
from meshrl.inputs.data.preferences import PreferenceItem


class TrainStep(Protocol):
    def __call__(self, batch: Any, step: int) -> dict[str, float]:
        """One update on a RolloutBatch (advantages, loss, optimizer step); returns its metrics."""


class WeightsExport(Protocol):
    def __call__(self) -> Mapping[str, Any]:
        """The policy's full state dict, as the rollout engines load it."""


class WeightsPush(Protocol):
    async def publish(self, state_dict: Mapping[str, Any], *, version: int, step: int) -> dict[str, float]:
        """Make `version` loadable by the rollout engines and announce it, or start to (the
        rest in the background: `drain`); returns timings of what it waited for."""

    async def drain(self) -> dict[str, float]:
        """Await a push still in flight; its timings ({} when none), its error if it failed."""


class CheckpointStore(Protocol):
    def save(self, step: int, state: dict, tag: str | None = None) -> Path:
        """Write a checkpoint of `step` holding the loop's `state` (JSON); returns its dir."""

    def path_of(self, step: int) -> Path:
        """Where the checkpoint of `step` lives."""

    def tag(self, step: int, name: str) -> Path:
        """Give an existing checkpoint a name (kept by retention); returns its dir."""

    def restore_if_any(self, source: str | Path) -> dict | None:
        """At a resume: load the newest checkpoint `source` holds (a run dir or a checkpoint);
        returns the loop's saved `state`, or None when there is none."""


class AlertJudge(Protocol):
    def observe(self, step: int, metrics: Mapping[str, Any]) -> Sequence[Any]:
        """Judge one step's metrics; returns the alerts that fired (each has .rule, .action, .message)."""


class StepEvaluation(Protocol):
    def write_train(self, step: int, groups: Sequence[common_pb2.Group]) -> None:
        """Keep a few trained samples for spot checks (samples.jsonl)."""

    def due(self, step: int) -> bool:
        """Whether `maybe_run(step, ...)` evaluates."""

    async def maybe_run(self, step: int, version: int) -> dict[str, float]:
        """Held-out evaluation when due at `step`, else {}."""

    async def close(self) -> None: ...


class HealthProbe(Protocol):
    async def run(self) -> None:
        """Probe the services until cancelled, feeding what it finds to the alerts."""


class PreferencePairs(Protocol):
    def next_batch(self, k: int) -> list[PreferenceItem]:
        """The next `k` pairs (tokenized prompt, chosen, rejected), epochs reshuffled."""

    def state_dict(self) -> dict:
        """The cursor, for a checkpoint."""

    def load_state_dict(self, state: dict) -> None:
        """Resume the cursor from a checkpoint's `state_dict()`."""


class PreferenceStep(Protocol):
    loss_state: dict  # what a preference loss keeps across steps (bco_pair's running mean)

    def __call__(self, batch: PreferenceBatch, step: int) -> dict[str, float]:
        """One preference update on the pairs; returns its metrics."""
