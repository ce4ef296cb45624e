"""The calculator tool: arithmetic evaluated from Python's AST, never with eval.

    evaluate("(3+4)*2")        # 14
    evaluate("2^10 / 4")       # 256   (^ is a power, as on a calculator)
    evaluate("sqrt(2)")        # 1.41421356237

Allowed: integer and decimal numbers, + - * / // % ** ^, unary + -, parentheses, the
constants pi and e, and sqrt, abs, round, floor, ceil, log, exp. Anything else (names,
attributes, strings, lambdas, comprehensions) is refused naming it. Work is bounded before
it is done: an expression of at most 200 characters, integers of at most 4096 bits, powers
whose result would be bigger refused without computing them; a result that is not finite is
an error. Errors are ValueError with a message the model can read.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Callable

MAX_CHARS = 200
MAX_INT_BITS = 4096
Number = int | float
BINARY: dict[type, Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
FUNCTIONS: dict[str, Callable[..., Number]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "exp": math.exp,
}
CONSTANTS = {"pi": math.pi, "e": math.e}
SYMBOLS = {"×": "*", "÷": "/", "−": "-", "^": "**"}  # ^ as text: it must bind like ** does


def _bounded(value: Number) -> Number:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueError(f"the result has more than {MAX_INT_BITS} bits; use smaller numbers")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("the result is not a finite number")
    return value


def _power(base: Number, exponent: Number) -> Number:
    """Refuse a power whose result is too big before computing it (9**9**9 would hang)."""
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base) > 1
        and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS
    ):
        raise ValueError(f"{base}**{exponent} has more than {MAX_INT_BITS} bits; use smaller numbers")
    try:
        return math.pow(base, exponent) if isinstance(base, float) or isinstance(exponent, float) else base**exponent
    except OverflowError:
        raise ValueError("the result is too large") from None


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        raise ValueError(f"unknown function {name!r}; the functions are: {', '.join(FUNCTIONS)}")
    return FUNCTIONS[node.func.id](*(_value(a) for a in node.args))


def _value(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_value(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow):
            return _bounded(_power(left, right))
        return _bounded(BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        return _bounded(_call(node))
    raise ValueError(
        f"{ast.unparse(node)!r} is not arithmetic: use numbers, + - * / // % ** ^, "
        f"parentheses, pi, e and {', '.join(FUNCTIONS)}"
    )


def evaluate(expression: str) -> Number:
    """The value of `expression` (ValueError naming what is wrong)."""
    text = expression.strip()
    for symbol, ascii_op in SYMBOLS.items():
        text = text.replace(symbol, ascii_op)
    if not text:
        raise ValueError("the expression is empty")
    if len(text) > MAX_CHARS:
        raise ValueError(f"the expression has {len(text)} characters; at most {MAX_CHARS}")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, RecursionError, MemoryError) as err:
        raise ValueError(f"{text!r} is not a valid expression ({type(err).__name__})") from None
    try:
        return _value(tree.body)
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except (TypeError, OverflowError) as err:
        raise ValueError(f"cannot compute {text!r}: {err}") from None


def format_number(value: Number) -> str:
    """Integers exactly; floats to 12 significant digits, whole ones without '.0'."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value) if isinstance(value, int) else format(value, ".12g")


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result, e.g. (3+4)*2 or 127*49.

    Args:
        expression: numbers with + - * / // % ** and parentheses; sqrt, abs, round, floor, ceil, log, exp; pi, e.
    """
    return format_number(evaluate(expression))
