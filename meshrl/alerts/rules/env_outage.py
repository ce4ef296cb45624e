"""`env_outage`: every group that arrived for `after_s` seconds was dropped because an episode's
environment could not be reached or did not answer in time.

The environment's twin of `reward_outage` (outage.py), with the same clock: the rollout
retries UNAVAILABLE itself, so a group dropped `env_unavailable` (or `env_deadline_exceeded`)
means the environment service is down or stuck, not that one call was unlucky. The learner
throttles its prompts to probes and, after `max_wait_s`, stops (services/learner/gather.py).
Fed by `AlertEngine.progress("env_failed")` (such a drop) and `progress("env_answered")` (a
group the rollout finished); other drops say nothing either way.
"""

from __future__ import annotations

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.outage import OutageClock, RewardOutage

# Group.drop_reason codes that mean "the environment service is not there" (not "it is wrong")
OUTAGE_CODES = frozenset({"env_unavailable", "env_deadline_exceeded"})


def environment_clock() -> OutageClock:
    return OutageClock(
        failing="was dropped: its environment could not be reached or did not answer in time",
        check="check the environment service: `meshrl status RUN_DIR`, its log, "
        "environment.address / replicas, environment.timeout_s",
    )


@register_rule("env_outage")
class EnvOutage(RewardOutage):
    failed_kind, ok_kind = "env_failed", "env_answered"

    @staticmethod
    def make_clock() -> OutageClock:
        return environment_clock()
