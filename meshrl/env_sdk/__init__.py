"""Write an environment (the tools and world an agent acts in) as a served gRPC service.

    from meshrl.env_sdk import Environment, Step, serve

    def calculator(expression: str) -> str:
        \"\"\"Evaluate an arithmetic expression such as (3+4)*2.\"\"\"
        return str(safe_eval(expression))

    class Arith(Environment):
        tools = [calculator]                      # JSON Schema from the signature
        def reset(self, task):                    # one instance per episode
            self.answer = str(task.ground_truth)
        def step(self, turn):
            if turn.tried_tools:                  # answer the calls; the model goes on
                return Step(self.call_tools(turn))
            return Step(done=True, reward=float(self.answer in turn.text))

    serve(Arith, port=50080)                      # blocks; SIGTERM/Ctrl-C stops it

What you get: meshrl.env.v1.EnvironmentService (protos/meshrl/env/v1/env.proto) with
grpc.health.v1 and reflection; Reset idempotent per episode id and Step per (id, turn);
malformed calls, unknown episodes, out-of-order turns and a full replica answered with the
contract's status codes; the caller's deadline honoured; an environment's exception or
invalid answer (NaN reward, unknown role) turned into INTERNAL naming it; bad tool calls
(bad JSON, unknown tool, wrong argument types) turned into error observations the model
reads; TLS from MESHRL_GRPC_TLS_* and a bearer token from MESHRL_ENV_TOKEN(_FILE).
A turn whose tool calls meshrl refused carries them in `turn.rejected_tool_calls` (with the
reason the model reads); `turn.tried_tools` is true for it, so it is not taken for a final
answer. `task.group_seed` is the same for every episode of a group: draw a task from it.
`start(...)` is the async form (tests). Check a server with `meshrl env check HOST:PORT`;
semantics: docs/environments.md.
"""

from meshrl.env_sdk.environment import Environment, Reset, Step
from meshrl.env_sdk.errors import EnvError
from meshrl.env_sdk.limits import Limits
from meshrl.env_sdk.messages import Message, RejectedToolCall, ToolCall, tool_result, user
from meshrl.env_sdk.serve import serve, start, stop
from meshrl.env_sdk.task import Task, Turn
from meshrl.env_sdk.tools import FunctionTool, ToolCallError, tool

__all__ = [
    "EnvError",
    "Environment",
    "FunctionTool",
    "Limits",
    "Message",
    "RejectedToolCall",
    "Reset",
    "Step",
    "Task",
    "ToolCall",
    "ToolCallError",
    "Turn",
    "serve",
    "start",
    "stop",
    "tool",
    "tool_result",
    "user",
]
