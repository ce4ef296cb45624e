"""Chaos tests reuse the end-to-end fixtures: the tiny model (tests/conftest.py) and data.
At the end of the session, the table of what each fault cost (tests/chaos/report.py)."""

from tests.chaos import report
from tests.e2e.conftest import e2e_data  # noqa: F401  (a fixture, found by pytest by name)


def pytest_terminal_summary(terminalreporter):
    if report.ROWS:
        terminalreporter.section("chaos: what each fault cost")
        for line in report.table(report.ROWS):
            terminalreporter.write_line(line)
