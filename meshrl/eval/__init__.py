"""Held-out evaluation through the mesh's gRPC services, and samples for human spot checks.

- `Evaluator` (evaluator.py): every eval prompt greedily, plus pass@k sampling when asked,
  through `RolloutService.Generate` (spread over replicas) and `RewardService.Score`.
- `EvalPlan` (plan.py): what to sample and what counts as correct, from a `RunConfig`.
- `pass_at_k` (passk.py): the unbiased estimator of Chen et al. (2021).
- `SampleWriter` (samples.py): rows to RUN_DIR/samples.jsonl (train and eval splits).

A client of the services, never a service: nothing here imports `meshrl.services`.
`EvalUnavailable` (here): why an evaluation could not run.
"""


class EvalUnavailable(RuntimeError):
    """Rollout or reward could not serve the evaluation (unreachable, missing, or on older
    weights); the message names which and why."""
