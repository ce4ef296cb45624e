"""The one registry mechanism (meshrl/registry.py): a name maps to what registered it, a
second registration of a name is refused naming both places, an unknown name is refused with
the closest one and the list, and a folder's files are imported on the first lookup.

    .venv/bin/python -m pytest -q tests/unit/test_registry.py
"""

import subprocess
import sys

import pytest

from meshrl.registry import REGISTRIES, Registry, UnknownNameError


@pytest.fixture
def registry():
    made = Registry("test widget", decorator="register_widget")
    yield made
    del REGISTRIES["test widget"]


def test_the_decorator_maps_a_name_to_the_object_and_keeps_what_it_declares(registry):
    @registry.register("round", sides=0)
    class Round:
        pass

    assert registry.get("round") is Round and "round" in registry
    entry = registry.entry("round")
    assert (entry.origin, dict(entry.declared)) == (f"{__name__}.{Round.__qualname__}", {"sides": 0})
    assert registry.names() == ["round"] and REGISTRIES["test widget"] is registry


def test_a_name_registered_twice_is_refused_naming_both_places(registry):
    def first():
        pass

    def second():
        pass

    registry.add("w", first)
    with pytest.raises(ValueError) as info:
        registry.add("w", second)
    message = str(info.value)
    assert message == (
        f"test widget 'w' is already registered by {__name__}.{first.__qualname__}, "
        f"so {__name__}.{second.__qualname__} cannot take it; pick another name"
    )


def test_an_unknown_name_is_refused_with_the_closest_and_the_list(registry):
    for name in ("square", "triangle"):
        registry.add(name, object(), origin="here")
    with pytest.raises(UnknownNameError) as info:
        registry.get("sqare")
    assert str(info.value) == (
        "unknown test widget 'sqare' (did you mean 'square'?); registered: square, triangle. "
        "Add one with @register_widget('sqare')."
    )
    with pytest.raises(KeyError, match=r"unknown test widget 'zzz'; registered: square, triangle\."):
        registry.get("zzz")


def test_one_registry_per_kind(registry):
    with pytest.raises(ValueError, match="a registry of test widgets already exists"):
        Registry("test widget")


def test_a_folder_is_imported_on_the_first_lookup_only():
    """The alert rules' registry: importing it imports no rule; the first lookup imports
    every file of meshrl/alerts/rules, so each file's decorator has run."""
    code = (
        "import sys; from meshrl.alerts.registry import ALERT_RULES; "
        "before = 'meshrl.alerts.rules.kl' in sys.modules; "
        "names = ALERT_RULES.names(); "
        "print(before, 'kl_high' in names, 'meshrl.alerts.rules.kl' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]
