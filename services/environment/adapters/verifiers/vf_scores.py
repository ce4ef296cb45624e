"""A verifiers rubric's scores, checked (library side: runs in the verifiers venv).

verifiers turns a reward function that raises or returns something that is no number into a
logged 0.0, and lets NaN through; trained on, either teaches the policy from a score nobody
gave. Here every rubric function is wrapped before the first episode: its value must be a
finite number, and a function that raised, returned text, None, NaN or inf is named in the
episode's `RubricError`, so meshrl drops the group with that reason instead of training on it.

    check_rubric(env.rubric)                      # once, after load_environment
    reward, details, weights = await score(env, state)
"""

import contextvars
import functools
import inspect
import math
import numbers

PROBLEMS: contextvars.ContextVar = contextvars.ContextVar("rubric_problems")


class RubricError(ValueError):
    """A rubric function gave no finite number for this episode."""


def rubrics_of(rubric) -> list:
    """The rubric and every rubric inside it (a RubricGroup holds several)."""
    inner = getattr(rubric, "rubrics", None) or []
    return [rubric] + [r for child in inner for r in rubrics_of(child)]


def _record(name: str, problem: str) -> None:
    problems = PROBLEMS.get(None)
    if problems is not None:
        problems.append(f"{name} {problem}")


def _checked_value(name: str, value):
    """A number (bool and numpy's included) that is finite; anything else is recorded."""
    if not isinstance(value, numbers.Real):
        _record(name, f"returned {value!r:.80} (not a number)")
        return 0.0
    if not math.isfinite(value):
        _record(name, f"returned {value} (not finite)")
    return value


def checked(func):
    """`func` with its value checked; same name and signature (verifiers reads both)."""
    name = getattr(func, "__name__", repr(func))

    async def later(awaitable):
        try:
            return _checked_value(name, await awaitable)
        except Exception as err:
            _record(name, f"raised {type(err).__name__}: {err}")
            raise

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            value = func(*args, **kwargs)
        except Exception as err:
            _record(name, f"raised {type(err).__name__}: {err}")
            raise
        return later(value) if inspect.isawaitable(value) else _checked_value(name, value)

    wrapper.__signature__ = inspect.signature(func)
    return wrapper


def check_rubric(rubric) -> None:
    """Wrap every reward function of the rubric (and of the rubrics it groups)."""
    for r in rubrics_of(rubric):
        r.funcs = [checked(f) for f in r.funcs]


def weights_of(rubric) -> dict:
    names = rubric._get_reward_func_names()
    return {n: float(w) for n, w in zip(names, rubric._get_reward_weights())}


async def score(env, state) -> tuple:
    """(total, {function: score}, {function: weight}) of a finished episode; RubricError
    naming each function that gave no finite number."""
    problems: list = []
    token = PROBLEMS.set(problems)
    try:
        await env.rubric.score_rollout(state)
        await env.rubric.cleanup(state)
    finally:
        PROBLEMS.reset(token)
    if problems:
        raise RubricError("the rubric gave no score: " + "; ".join(problems))
    details = {str(k): float(v) for k, v in (state.get("metrics") or {}).items()}
    return float(state["reward"]), details, weights_of(env.rubric)
