"""Held-out evaluation of an environment's tasks: the episode's env reward is the value of the
run's `environment` reward components, which the reward service cannot read from a text."""

import math

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.config import load_config
from meshrl.eval.correct import judge
from meshrl.eval.plan import EvalPlan
from meshrl.eval.records import from_group, with_environment_reward


def test_the_plan_knows_the_environment_and_its_components():
    cfg = load_config(
        base={
            "model": {"path": "/m"},
            "data": {"train": "/d"},
            "environment": {"name": "tool_arith", "builtin": "tool_arith"},
            "reward": {
                "components": [
                    {"name": "env", "kind": "environment"},
                    {"name": "correct", "kind": "math_verify", "weight": 0.0},
                ]
            },
        }
    )
    plan = EvalPlan.from_run_config(cfg)
    assert (plan.environment, plan.environment_components) == ("tool_arith", ("env",))


def test_episodes_are_judged_by_their_environment_reward():
    group = pb.Group(
        group_id="g",
        task=pb.PromptTask(prompt_text="p", ground_truth="6"),
        samples=[
            pb.Sample(index=0, response_text="525*979", env_reward=0.0, has_env_reward=True),
            pb.Sample(index=1, response_text="513975", env_reward=1.0, has_env_reward=True),
            pb.Sample(index=2, response_text="?"),
        ],
    )
    samples = from_group(group, 0, "greedy")
    with_environment_reward(samples, ("env",))
    assert [s.components["env"] for s in samples] == [
        {"value": 0.0, "status": "OK"},
        {"value": 1.0, "status": "OK"},
        {"value": None, "status": "ERROR"},
    ]
    assert judge(samples, "env", 1.0) == 1 and [s.correct for s in samples] == [False, True, False]
    assert samples[2].env_reward is None and not math.isnan(samples[0].env_reward)
