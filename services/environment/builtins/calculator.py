"""`calculator`: a stateless tool environment offering the calculator (calculator.py).
Step answers the turn's calculator calls and never ends the episode itself."""

from meshrl.env_sdk import Environment
from meshrl.services.environment.calculator import calculator
from meshrl.services.environment.registry import Builtins, register_builtin


class Calculator(Environment):
    name = "calculator"
    tools = [calculator]


@register_builtin("calculator")
def calculator_env(ctx: Builtins) -> type[Environment]:
    return Calculator
