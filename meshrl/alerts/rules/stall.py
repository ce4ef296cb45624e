"""`rollout_stalled`: no new learner step, or no new group, for `after_s` seconds.

Judged on a clock, not on steps, because a stalled run produces no steps to judge: the
engine's `poll()` (called by the learner's wait loop) checks it. The first step gets
`startup_grace_s` (model load, engine start, first generation). Groups are watched only once
something reported one (`AlertEngine.progress("groups")`), so a learner that never reports
groups gets no false alarm.
"""

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule
from meshrl.alerts.types import Condition

WHAT = {"step": "learner step", "groups": "group"}
WATCHED = ("groups",)  # progress kinds this rule times (the step comes from on_step)


@register_rule("rollout_stalled")
class RolloutStalled(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.started: float | None = None
        self.last: dict[str, float] = {}

    def on_progress(self, kind, now):
        if kind == "start":
            self.started = now
        elif kind in WATCHED:  # other kinds (scored, env_failed, dropped:...) are other rules' facts
            self.last[kind] = now

    def on_step(self, step, metrics, now):
        self.last["step"] = now
        return [Condition(f"{self.name}:step", False)]

    def _verdict(self, kind: str, since: float, limit: float, now: float) -> Condition:
        idle = now - since
        what = WHAT.get(kind, kind)
        first = "" if kind in self.last else " since start (no first one yet)"
        message = f"no new {what} for {idle:.0f} s{first}; limit {limit:g} s"
        return Condition(f"{self.name}:{kind}", idle > limit, message, {"idle_s": idle, "limit_s": limit})

    def on_poll(self, now, health):
        c = self.config
        verdicts = [self._verdict(kind, t, c.after_s, now) for kind, t in self.last.items()]
        if "step" not in self.last and self.started is not None:
            verdicts.append(self._verdict("step", self.started, c.startup_grace_s, now))
        return verdicts
