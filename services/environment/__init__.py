"""The environment service: meshrl's built-in environments and tools served over
meshrl.env.v1.EnvironmentService (built on meshrl.env_sdk).

Built-ins (registry.py): `calculator` (a safe arithmetic tool), `python` (a sandboxed
Python tool: sandbox/), `tool_arith` (the example task: arithmetic with the calculator
offered, rewarded at the end for the right answer).

Run: python -m meshrl.services.environment --port 50090 [--environments tool_arith,calculator,python]
"""
