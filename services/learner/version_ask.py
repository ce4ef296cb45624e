"""Which weights version a prompt asks for: the oldest one still allowed when its group is trained.

A prompt published now is not trained now. Groups are trained roughly in the order their
prompts went out, `prompts_per_step` per step, so a prompt with `ahead` groups in flight in
front of it lands in step `(trained + ahead) // prompts_per_step`. By then the learner will
have pushed once per `push_every` steps more, and with `max_staleness: k` that step accepts
groups sampled with its version minus k. That is what the prompt must ask for.

The old rule asked for `version - k` at publish time. In steady asynchronous state
(`max_staleness: 1`, in-flight bound 2 × prompts_per_step) the prompts published right after
v was pushed are trained one step later, at v + 1, so `v - 1` let a replica that had not
loaded v yet serve them on v - 1: two versions behind, dropped as stale (a third of the
groups: docs/benchmarks.md, "meshrl side by side with TRL"). Asked this way they wait for v,
which the replica loads while the learner trains on the groups already generated, so
generation overlaps training and only groups overtaken by later ones are still dropped.

The answer never exceeds the version the learner holds: no replica can have a newer one.

    min_policy_version(version=3, trained=12, ahead=4, prompts_per_step=4,
                       push_every=1, max_staleness=1) == 3
"""

from __future__ import annotations


def landing_step(*, trained: int, ahead: int, prompts_per_step: int) -> int:
    """The (0-based) step expected to train a group published with `ahead` others in flight."""
    return (trained + ahead) // prompts_per_step


def pushes_between(step_now: int, step_then: int, push_every: int) -> int:
    """Pushes done after steps step_now .. step_then - 1 (a push follows every step
    whose number + 1 is a multiple of push_every)."""
    return step_then // push_every - step_now // push_every


def min_policy_version(
    *, version: int, trained: int, ahead: int, prompts_per_step: int, push_every: int, max_staleness: int
) -> int:
    """The oldest version a replica may sample this prompt with so that the learner, at the
    step expected to train it, still accepts it; within [0, version]."""
    step_now = trained // prompts_per_step
    step_then = landing_step(trained=trained, ahead=ahead, prompts_per_step=prompts_per_step)
    version_then = version + pushes_between(step_now, step_then, push_every)
    return max(0, min(version, version_then - max_staleness))
