"""`python`: a stateless tool environment offering a sandboxed Python interpreter.

The tool runs the model's program in the service's sandbox (sandbox/: no network, its own
PID and mount namespaces, a throwaway user and /tmp, CPU/memory/process/output/file limits,
a wall clock) and answers JSON: exit_code, stdout, stderr and, when a limit stopped it,
`stopped` naming the limit. Starting the service with this environment fails at once when
the host cannot isolate a program (sandbox/isolation.py says how to fix it).
"""

from meshrl.env_sdk import Environment, FunctionTool
from meshrl.services.environment.registry import Builtins, register_builtin
from meshrl.services.environment.sandbox import Sandbox


def python_tool(sandbox: Sandbox) -> FunctionTool:
    limits = sandbox.limits

    def python(code: str) -> str:
        return sandbox.run(code).for_model()

    python.__doc__ = (
        f"Run a Python 3 program and return its exit_code, stdout and stderr as JSON. No network; "
        f"files do not persist; at most {limits.cpu_s} s of CPU, {limits.wall_s:g} s in all, "
        f"{limits.memory_bytes >> 20} MiB of memory.\n\nArgs:\n    code: the program; print what "
        f"you want to see."
    )
    return FunctionTool(python)


@register_builtin("python")
def python_env(ctx: Builtins) -> type[Environment]:
    return type("PythonTool", (Environment,), {"name": "python", "tools": [python_tool(ctx.sandbox)]})
