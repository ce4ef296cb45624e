"""The environment service's built-ins come from its registry (meshrl/registry.py): every file
of services/environment/builtins/ is one, a built-in may be served under an alias, and an
unknown name is refused with the closest one and the list."""

import pytest

from meshrl.services.environment.registry import BUILTINS, Builtins, environments


def test_every_file_of_the_folder_is_a_builtin_served_by_name_or_alias():
    assert BUILTINS.names() == ["calculator", "python", "tool_arith"]
    served = environments(["tool_arith", "calc=calculator"], Builtins())
    assert sorted(served) == ["calc", "tool_arith"]
    assert served["calc"].name == "calc" and served["tool_arith"].name == "tool_arith"


def test_an_unknown_builtin_is_refused_with_the_closest_and_the_list():
    with pytest.raises(ValueError) as info:
        environments(["calculater"], Builtins())
    assert str(info.value) == (
        "unknown built-in environment 'calculater' (did you mean 'calculator'?); registered: calculator, "
        "python, tool_arith. Add one with @register_builtin('calculater')."
    )
