"""A part of the user's own package, named by import path: read from its source, never run.

    algorithm:
      advantage_estimator: my_pkg.parts:my_baseline
      policy_loss: my_pkg.parts:my_loss

(torchtune's `_component_`, prime-rl's import paths.) At load the module is found without
running it (importlib's find_spec imports only its parent packages) and the function's
decorator and signature read from its source: a module that is not there, a function it
does not define, or a function registered as another kind of part is refused with the fix.
Reading rather than importing is what lets the gateway check a tenant's config without
running the tenant's code. The learner imports it (meshrl.algos.registry). An undecorated
function is taken as a part with the decorator's defaults (no critic, token level).
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from pathlib import Path

from meshrl.config.parts_table import DEDICATED_OPTION_KEYS, INPUTS, Declared, decorators


def options_of(fn: ast.FunctionDef) -> tuple[str, ...]:
    args = fn.args
    with_defaults = [a.arg for a in args.args[len(args.args) - len(args.defaults) :]]
    with_defaults += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return tuple(n for n in with_defaults if n not in INPUTS and n not in DEDICATED_OPTION_KEYS)


def decorator_call(fn: ast.FunctionDef, decorator: str) -> ast.Call | None:
    for node in fn.decorator_list:
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == decorator:
            return node
    return None


def literal(call: ast.Call, key: str, default):
    for kw in call.keywords:
        if kw.arg == key:
            return ast.literal_eval(kw.value)
    return default


def declared_in(call: ast.Call, family: str, name: str, fn: ast.FunctionDef) -> Declared:
    return Declared(
        family,
        name,
        options_of(fn),
        needs_values=bool(literal(call, "needs_values", False)),
        needs=tuple(literal(call, "needs", ())),
        level=literal(call, "level", "token"),
        two_sided=bool(literal(call, "two_sided", False)),
        uses_reference=bool(literal(call, "uses_reference", True)),
        per_pair=bool(literal(call, "per_pair", True)),
    )


def functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def is_import_path(value: str) -> bool:
    return ":" in str(value)


def imported_part(key: str, value: str, family: str) -> Declared:
    """The declaration of `module:function`, read from the module's source without importing it."""
    module, _, attr = value.partition(":")
    where = f"{key}={value!r}"
    try:
        spec = importlib.util.find_spec(module) if module and attr else None
    except (ImportError, ValueError) as err:
        raise ValueError(
            f"{where}: cannot find module {module!r} ({err}); install the package or add its folder to PYTHONPATH"
        ) from None
    except Exception as err:  # its parent package's __init__ raised: named by type, not echoed
        raise ValueError(
            f"{where}: importing the packages above {module!r} raised {type(err).__name__}; fix that package"
        ) from None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ValueError(
            f"{where}: no Python module {module!r} here (expected `package.module:function`); "
            f"install the package or add its folder to PYTHONPATH"
        )
    defined = source_functions(where, Path(spec.origin))
    if attr not in defined:
        close = difflib.get_close_matches(attr, list(defined), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"{where}: {module} ({spec.origin}) defines no function {attr!r}{hint} "
            f"Functions there: {', '.join(sorted(defined)) or 'none'}"
        )
    return declared_for(where, family, value, defined[attr])


def source_functions(where: str, path: Path) -> dict[str, ast.FunctionDef]:
    """`functions(path)`, its failures as one line naming the file and line, never its text."""
    try:
        return functions(path)
    except SyntaxError as err:
        raise ValueError(f"{where}: {path} is not valid Python ({err.msg}, line {err.lineno}); fix the file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{where}: {path} cannot be read ({type(err).__name__}); fix the file") from None


def declared_for(where: str, family: str, name: str, fn: ast.FunctionDef) -> Declared:
    """A function named by import path: its own family's decorator, or none (the defaults)."""
    for other, decorator in decorators().items():
        call = decorator_call(fn, decorator)
        if call is not None and other != family:
            raise ValueError(
                f"{where} is registered with @{decorator} ({other}), not as a {family}: name a {family} here"
            )
        if call is not None:
            return declared_in(call, family, name, fn)
    return Declared(family, name, options_of(fn))
