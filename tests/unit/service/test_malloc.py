"""keep_freed_memory: glibc takes the settings; an operator's MALLOC_* variable is left to win.

Run: .venv/bin/python -m pytest tests/unit/service/test_malloc.py
"""

from meshrl.service import malloc


class FakeLibc:
    """Stands in for glibc: records mallopt calls, accepts or refuses them."""

    def __init__(self, answer: int = 1):
        self.calls, self.answer = [], answer

        def mallopt(param, value):
            self.calls.append((param, value))
            return self.answer

        self.mallopt = mallopt


def test_glibc_takes_the_settings():
    assert malloc.keep_freed_memory() is True  # the real libc of this (glibc) host


def test_every_setting_is_passed_unless_the_environment_sets_it(monkeypatch):
    fake = FakeLibc()
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: fake)
    monkeypatch.delenv("MALLOC_TOP_PAD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert malloc.keep_freed_memory() is True
    assert sorted(fake.calls) == sorted([(malloc.M_MMAP_THRESHOLD, 32 << 20), (malloc.M_TOP_PAD, 512 << 20)])


def test_a_refusal_is_reported(monkeypatch):
    monkeypatch.setattr(malloc.ctypes, "CDLL", lambda name: FakeLibc(answer=0))
    assert malloc.keep_freed_memory() is False


def test_no_libc_changes_nothing(monkeypatch):
    def missing(name):
        raise OSError("no libc")

    monkeypatch.setattr(malloc.ctypes, "CDLL", missing)
    assert malloc.keep_freed_memory() is False
