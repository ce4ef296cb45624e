"""The environment conformance kit: `meshrl env check ADDRESS` (docs/environments.md).

Runs a fixed suite against any implementation of meshrl.env.v1.EnvironmentService and returns
one row per check (PASS / FAIL / INFO) with a fix under each failure. Every call carries a
deadline, so the kit ends even against a server that never answers. The suite:

- health (grpc.health.v1 SERVING for "" and for EnvironmentService; required), reflection
  (optional: INFO); without --environment, the server's one name checked and said (names.py);
- one episode's life: Reset, Reset again (idempotent), Step turn 0, the same turn again
  (idempotent), turns until done (INFO when never: a stateless tool server), a Step after
  done (FAILED_PRECONDITION), Close twice (both OK), a Step after Close (NOT_FOUND);
- malformed tool calls (bad JSON, an unknown tool, no arguments) answered, not failed; a
  turn whose only call meshrl refused (rejected_tool_calls) not taken for a final answer
  (INFO when it is); two episodes of one group (one group_seed, two seeds) given one task
  (INFO when their first answers differ);
- statuses: an unknown episode (NOT_FOUND), an empty id on Step and Reset, a turn out of order
  (INVALID_ARGUMENT), bytes that are no message (any status but OK); without the token when
  one is given (UNAUTHENTICATED);
- a 1 ms deadline ends the call by it, and the same Reset retried then works;
- 8 episodes at once; and every answer received checked against the contract (an answer the
  SDK refused to send counts too; rows failed by it point at that row: root_cause.py).

    from meshrl.cli.env_check import run_suite
    rows = asyncio.run(run_suite(channel, task=load_task(None, environment="")))
"""

from meshrl.cli.env_check.suite import run_suite
from meshrl.cli.env_check.task import load_task

__all__ = ["load_task", "run_suite"]
