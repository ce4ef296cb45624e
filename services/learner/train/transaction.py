"""A training step that fails leaves the models as they were: weights, optimizer state, KL
coefficient, and no stray gradients.

Two mechanisms, chosen by how many optimizer steps the batch takes:

- **one** (the usual GRPO step: one epoch, one mini-batch): nothing that can fail runs after
  the optimizer step. The step's last update is left *pending* (gradients computed and
  clipped, the norm checked) while the metrics are reduced across ranks; only then does
  `apply_pending` call `optimizer.step()`. After it come only the LR scheduler and float
  conversions. (On CUDA the metrics' all-reduce is exactly where a step can fail after
  `optimizer.step()`.)
- **several** (`ppo_epochs` or `mini_batches` > 1): update k+1's forward must see update k's
  weights, so a later failure (a non-finite loss, an out-of-memory) comes after weights have
  moved. The step then takes a snapshot of every parameter and optimizer-state tensor at its
  start (`trainer.rollback`: `device` = a copy beside them, fast, costing weights + optimizer
  state in device memory; `host` = a copy in (pinned) host memory, slower on a GPU; `off` =
  no snapshot: a failed multi-update step leaves the weights part-updated, and the run
  resumes from its last checkpoint as before). `auto` = `device` for several updates, none
  for one.

Either way a failure clears the gradients (a half-accumulated sum would leak into the next
step) and puts back the KL controller's coefficient, then re-raises.

Simplification: an exception raised *inside* `optimizer.step()` itself (e.g. the first step's
out-of-memory allocating AdamW's state) is covered only by a snapshot.
"""

from __future__ import annotations

from typing import Iterable

import torch

from meshrl.services.learner.train.policy import TrainedModel


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's shard of an FSDP2 DTensor (a view: writes land in it), or the tensor."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def copy_to(tensor: torch.Tensor, where: str) -> torch.Tensor:
    """A detached copy of `tensor`'s local data beside it (`device`) or in host memory (`host`)."""
    data = local(tensor.detach())
    if where == "device":
        return data.clone()
    pinned = data.is_cuda
    out = torch.empty(data.shape, dtype=data.dtype, device="cpu", pin_memory=pinned)
    return out.copy_(data, non_blocking=pinned)


class Snapshot:
    """Copies of the parameters and optimizer state of `models`, put back by `restore()`."""

    def __init__(self, models: Iterable[TrainedModel], where: str):
        self.params: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.states: list[tuple[torch.optim.Optimizer, dict]] = []
        for trained in models:
            self.params += [(p, copy_to(p, where)) for p in trained.model.parameters()]
            state = trained.optimizer.state
            self.states.append(
                (
                    trained.optimizer,
                    {
                        p: {k: copy_to(v, where) if torch.is_tensor(v) else v for k, v in s.items()}
                        for p, s in state.items()
                    },
                )
            )
        if where == "host" and torch.cuda.is_available():
            torch.cuda.synchronize()  # the non-blocking copies have landed before any update

    @torch.no_grad()
    def restore(self) -> None:
        for param, saved in self.params:
            local(param).copy_(saved)
        for optimizer, saved_state in self.states:
            for param in [p for p in optimizer.state if p not in saved_state]:
                del optimizer.state[param]  # state an update created (the first AdamW step)
            for param, saved in saved_state.items():
                current = optimizer.state[param]
                for key, value in saved.items():
                    if torch.is_tensor(value) and torch.is_tensor(current.get(key)):
                        local(current[key]).copy_(value)
                    else:
                        current[key] = value


def snapshot_place(setting: str, updates: int) -> str | None:
    """Where to snapshot (`device`/`host`) for `trainer.rollback=setting`, or None."""
    if setting == "off" or (setting == "auto" and updates <= 1):
        return None
    return "device" if setting == "auto" else setting


class StepTransaction:
    """`with StepTransaction(models, place, *stateful) as tx:` ... `tx.pending(model)` after an
    update's gradients are ready; `tx.apply_pending()` before the next forward and, last of
    all, after the metrics. On an exception: gradients cleared, the snapshot put back, and
    each of `stateful` (the KL controller: `state_dict`/`load_state_dict`; or a plain dict of
    numbers, such as a preference loss's running mean) restored to its value at the start."""

    def __init__(self, models: list[TrainedModel], place: str | None, *stateful):
        self.models = models
        self.snapshot = Snapshot(models, place) if place else None
        self.saved = [
            (obj, dict(obj) if isinstance(obj, dict) else obj.state_dict()) for obj in stateful if obj is not None
        ]
        self._pending: list[TrainedModel] = []

    def pending(self, trained: TrainedModel) -> None:
        self._pending.append(trained)

    def apply_pending(self) -> None:
        while self._pending:
            self._pending.pop(0).apply_gradients()

    def __enter__(self) -> "StepTransaction":
        return self

    def __exit__(self, kind, error, tb) -> None:
        if kind is None:
            return
        self._pending.clear()
        for trained in self.models:
            trained.optimizer.zero_grad(set_to_none=True)
        if self.snapshot is not None:
            self.snapshot.restore()
        for obj, state in self.saved:
            if isinstance(obj, dict):
                obj.clear()
                obj.update(state)
            else:
                obj.load_state_dict(state)
