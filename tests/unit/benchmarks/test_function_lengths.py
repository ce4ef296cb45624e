"""benchmarks/function_lengths.py counts lines the way issue 33 defines them."""

from benchmarks.function_lengths import FunctionLength, function_lengths, report

SOURCE = '''\
import functools


@functools.cache
def decorated():
    """The docstring counts, the decorator does not."""
    return 1


class Box:
    def method(self):
        def nested():
            return 2

        return nested()


async def waits():
    await something()
'''


def test_each_def_counts_from_its_def_line_to_its_last_line_nested_and_methods_included():
    lengths = {row.where: row.lines for row in function_lengths(SOURCE, "m.py")}
    assert lengths == {"m.py:5:decorated": 3, "m.py:11:method": 5, "m.py:12:nested": 2, "m.py:18:waits": 2}


def test_the_report_counts_over_each_limit_and_lists_the_longest_first():
    rows = [FunctionLength(50, "a.py:1:f"), FunctionLength(31, "b.py:2:g"), FunctionLength(30, "c.py:3:h")]
    assert report(rows, top=2).splitlines() == [
        "functions: 3  over 30: 2  over 45: 1",
        "  50  a.py:1:f",
        "  31  b.py:2:g",
    ]
