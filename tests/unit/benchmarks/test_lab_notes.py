"""benchmarks/lab_notes.py counts the comment and docstring lines that carry lab notes."""

from benchmarks.lab_notes import hash_notes, kind_of, python_notes

SOURCE = '''\
"""A module.

Measured on SmolLM2: shared 13.9 s a step, split 22.9 s.
"""

X = "issue 15 in a string is code, not a note"  # a timeout of 30 s: a default


def f():
    """Ran 2.7x faster here (issue 21)."""
    # see docs/benchmarks.md, "Training step": 16 MiB chunks
    return X
'''


def kinds(blocks):
    out = {}
    for first, lines in blocks:
        measures = any("Measured" in line or "faster" in line for line in lines)
        for offset, line in enumerate(lines):
            if kind := kind_of(line, measures):
                out[first + offset] = kind
    return out


def test_python_comments_and_docstrings_are_read_and_each_line_gets_its_first_kind():
    assert kinds(python_notes(SOURCE)) == {3: "figure", 10: "issue"}


def test_a_pointer_to_the_benchmarks_page_or_a_default_is_no_lab_note():
    assert kind_of('# see docs/benchmarks.md, "Training step": 16 MiB chunks', False) is None
    assert kind_of("# a timeout of 30 s: a default", False) is None
    assert kind_of("# 16 × 76 tokens on 2 cores", True) is None


def test_dates_and_yaml_comments():
    text = "steps: 8   # 2026-12-03: the main job's run\nname: x\n# issue 12.6\n"
    blocks = hash_notes(text)
    assert [(first, [kind_of(line, False) for line in lines]) for first, lines in blocks] == [
        (1, ["date"]),
        (3, ["issue"]),
    ]
