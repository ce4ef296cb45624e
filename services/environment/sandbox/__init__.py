"""The python tool's sandbox: run.py (run a program, get an Outcome), isolation.py (how this
host isolates it), limits.py (what it may use), init.py (PID 1 inside the namespaces)."""

from meshrl.services.environment.sandbox.isolation import Isolation, SandboxUnavailable, detect
from meshrl.services.environment.sandbox.limits import SandboxLimits
from meshrl.services.environment.sandbox.run import Outcome, Sandbox

__all__ = ["Isolation", "Outcome", "Sandbox", "SandboxLimits", "SandboxUnavailable", "detect"]
