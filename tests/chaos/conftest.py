"""Chaos tests reuse the end-to-end fixtures: the tiny model (tests/conftest.py) and data."""
from tests.e2e.conftest import e2e_data  # noqa: F401  (a fixture, found by pytest by name)
