"""The reward-service conformance kit: `meshrl reward check ADDRESS` (docs/reward-services.md).

Runs a fixed suite against any implementation of meshrl.reward.v1.RewardService and returns
one row per check (PASS / FAIL / INFO) with a fix for each failure. Every call carries a
deadline, so the kit ends even against a server that never answers. The suite:

- health (grpc.health.v1 SERVING; required), reflection (optional: INFO, never FAIL);
- scenarios, each one Score call (or several): a basic batch, a 1,000-item batch, 1 MiB
  responses, unicode and empty strings, concurrent calls, and an expired deadline (a call
  whose deadline is too short must end by it, and the service must answer afterwards);
- contract rows over every answer received: one result per item, ids matched (no unknown
  or repeated id), statuses used correctly, no non-finite score or detail with status OK.

    from meshrl.cli.reward_check import run_suite
    rows = asyncio.run(run_suite(channel, component=""))
"""

from meshrl.cli.reward_check.suite import run_suite
from meshrl.cli.reward_check.table import Row, any_failed, format_table

__all__ = ["Row", "any_failed", "format_table", "run_suite"]
