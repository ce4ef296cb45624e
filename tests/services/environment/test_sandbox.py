"""The python tool's sandbox, attacked for real: each bad program is run in the real
sandbox (unshare + namespaces + rlimits + a throwaway uid) and must be stopped and reported,
and must leave nothing behind; a program sees only its interpreter, the standard library and
private scratch folders (no checkout, no dataset, nothing of the program before it). Skipped only where the host cannot make namespaces at all
(then the python tool refuses to run: test_unavailable_sandbox_refuses)."""

import json
import os
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from meshrl.services.environment.sandbox import Isolation, Sandbox, SandboxLimits, SandboxUnavailable, detect
from meshrl.services.environment.sandbox.isolation import UID_BASE

LIMITS = SandboxLimits(cpu_s=1, wall_s=4.0, memory_bytes=256 << 20, processes=16, output_bytes=4096)
needs_namespaces = pytest.mark.skipif(not detect().mode, reason=f"no namespaces here: {detect().reason}")
SECRET = "run-secret-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def run_dir():
    """A run dir like the launcher's (0700, files 0600) outside /tmp (the sandbox gets its own /tmp)."""
    d = Path("/var/tmp") / f"meshrl-sandbox-test-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o700)
    (d / "secrets").mkdir(mode=0o700)
    (d / "secrets" / "token").write_text(SECRET)
    (d / "secrets" / "token").chmod(0o600)
    (d / "config.yaml").write_text(f"token: {SECRET}\n")
    yield d
    for p in sorted(d.rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    d.rmdir()


@pytest.fixture(scope="module")
def sandbox(run_dir):
    return Sandbox(LIMITS, detect(), hide=[run_dir])


def leftovers(within_s: float = 10.0) -> list[int]:
    """Processes still running as a throwaway uid after `within_s` (a sandbox that leaked; the
    kernel tears a PID namespace down asynchronously, so killed ones may linger a moment)."""
    deadline = time.monotonic() + within_s
    while (pids := _throwaway_pids()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids


def _throwaway_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid >= UID_BASE:
                pids.append(int(entry.name))
        except FileNotFoundError:
            pass
    return pids


@needs_namespaces
def test_a_plain_program_runs(sandbox):
    out = sandbox.run("print(sum(range(101)))")
    assert (out.exit_code, out.stdout, out.stopped) == (0, "5050\n", "")


@needs_namespaces
def test_fork_bomb_is_bounded_then_killed_with_its_children(sandbox):
    program = (
        "import os, sys, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
        "            time.sleep(60); os._exit(0)\n        n += 1\nexcept OSError as err:\n"
        "    print(n, type(err).__name__, flush=True)\ntime.sleep(60)\n"
    )
    out = sandbox.run(program)
    forked, error = out.stdout.split()
    assert int(forked) < LIMITS.processes and error == "BlockingIOError"  # RLIMIT_NPROC stopped it
    assert out.stopped == "wall-clock limit (4 s)" and out.exit_code is None
    assert leftovers() == []  # the sleeping children died with the namespace


@needs_namespaces
def test_classic_fork_bomb_leaves_nothing(sandbox):
    out = sandbox.run("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    assert out.stopped  # CPU or wall-clock limit
    assert leftovers() == []


@needs_namespaces
def test_ten_gigabytes_is_a_memory_error(sandbox):
    out = sandbox.run("x = bytearray(10 * 1024**3)\nprint('allocated')")
    assert "MemoryError" in out.stderr and "allocated" not in out.stdout
    assert out.stopped == "memory limit (256 MiB)" and out.exit_code == 1


@needs_namespaces
def test_an_endless_loop_hits_the_cpu_limit(sandbox):
    out = sandbox.run("while True:\n    pass")
    assert out.stopped.startswith(("CPU time limit", "killed: CPU time limit", "wall-clock limit"))
    assert out.exit_code in (None, 152, 137)


@needs_namespaces
def test_sleeping_forever_hits_the_wall_clock(sandbox):
    out = sandbox.run("import time\ntime.sleep(600)")
    assert out.stopped == "wall-clock limit (4 s)" and out.seconds < 30


@needs_namespaces
def test_a_gigabyte_of_stdout_is_cut_at_the_cap(sandbox):
    out = sandbox.run("import sys\nfor _ in range(16384):\n    sys.stdout.write('x' * 65536)\n")
    assert out.stopped == "output limit (more than 4096 bytes of stdout + stderr)"
    assert len(out.stdout) == 4096 and set(out.stdout) == {"x"}


@needs_namespaces
def test_no_network_not_even_to_the_hosts_loopback(sandbox):
    """A real listener on the host's 127.0.0.1: without a network namespace it would get the bytes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(6)
    port = listener.getsockname()[1]
    got = []
    accept = threading.Thread(target=lambda: got.append(_accept_one(listener)))
    accept.start()
    out = sandbox.run(
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        f"s.sendall(b'leak')\nprint('connected')"
    )
    accept.join()
    listener.close()
    assert "connected" not in out.stdout and got == [None]
    assert "OSError" in out.stderr or "ConnectionRefusedError" in out.stderr
    outside = sandbox.run("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)")
    assert "Network is unreachable" in outside.stderr


def _accept_one(listener: socket.socket):
    try:
        conn, _ = listener.accept()
        return conn.recv(16)
    except OSError:
        return None


@needs_namespaces
def test_cannot_read_the_run_dir_secrets_or_the_services_environment(sandbox, run_dir, monkeypatch):
    monkeypatch.setenv("MESHRL_ENV_TOKEN", SECRET)  # what the service process holds
    program = (
        f"import os, glob\nprint(sorted(os.environ))\n"
        f"for path in ['{run_dir}/config.yaml', '{run_dir}/secrets/token', '/proc/{os.getpid()}/environ',\n"
        f"             '/proc/1/environ']:\n"
        f"    try:\n        print(open(path).read())\n    except OSError as err:\n"
        f"        print(path, type(err).__name__)\n"
        f"print(glob.glob('{run_dir}/*'), os.getuid())\n"
    )
    out = sandbox.run(program)
    assert SECRET not in out.stdout + out.stderr
    assert f"{run_dir}/config.yaml FileNotFoundError" in out.stdout  # outside its root: not there at all
    assert f"/proc/{os.getpid()}/environ FileNotFoundError" in out.stdout  # another PID namespace's /proc
    assert "MESHRL_ENV_TOKEN" not in out.stdout


@needs_namespaces
def test_files_do_not_persist_between_runs(sandbox):
    assert sandbox.run("open('/tmp/work/note', 'w').write('hi'); open('/tmp/x', 'w').write('hi')").exit_code == 0
    out = sandbox.run("import os\nprint(os.listdir('/tmp/work'), os.path.exists('/tmp/x'))")
    assert out.stdout == "['main.py'] False\n"


@needs_namespaces
def test_userns_mode_hides_the_run_dir_by_mounts(run_dir):
    """In userns mode the program keeps the service's uid: only the mounts hide the run dir."""
    userns = detect("userns")
    if not userns.mode:
        pytest.skip(f"no user namespaces here: {userns.reason}")
    box = Sandbox(LIMITS, userns, hide=[run_dir])
    out = box.run(f"import os\nprint(os.listdir('{run_dir}'))\nprint(open('{run_dir}/config.yaml').read())")
    assert SECRET not in out.stdout and out.stdout == "" and "FileNotFoundError" in out.stderr
    assert "Network is unreachable" in box.run("import socket\nsocket.create_connection(('1.1.1.1', 53))").stderr


CHECKOUT = Path(__file__).resolve().parents[3]  # this repository: its source must stay out of reach
PRIVATE = ["/tmp", "/var/tmp", "/run/lock", "/dev/shm", "."]  # "." is the program's working dir


@pytest.fixture(params=["auto", "userns"])
def box(request, run_dir):
    """The sandbox in the mode this host picks, and in userns mode (the program keeps a uid that
    owns its files and is root inside: only its own root keeps the host out)."""
    isolation = detect(request.param)
    if not isolation.mode:
        pytest.skip(f"no {request.param} isolation here: {isolation.reason}")
    return Sandbox(LIMITS, isolation, hide=[run_dir])


@pytest.fixture
def marker():
    """A unique file name; whatever a leaking sandbox left on the host under it is removed after."""
    name = f"meshrl-left-{uuid.uuid4().hex[:12]}"
    yield name
    for folder in PRIVATE[:-1]:
        (Path(folder) / name).unlink(missing_ok=True)


@needs_namespaces
def test_nothing_a_program_writes_is_seen_by_the_next(box, marker):
    """The first program writes a file in every writable place; the next one (another slot, another
    uid) looks for them: a shared /var/tmp or /run/lock would show it, readable or not."""
    first = box.run(f"for d in {PRIVATE!r}:\n    open(d + '/{marker}', 'w').write('from the first program')\n")
    assert (first.exit_code, first.stderr) == (0, "")
    second = box.run(f"import os\nprint([os.path.exists(d + '/{marker}') for d in {PRIVATE!r}])")
    assert second.stdout == "[False, False, False, False, False]\n"
    assert not any((Path(d) / marker).exists() for d in PRIVATE[:-1])  # nor left on the host


@needs_namespaces
def test_the_projects_own_source_is_not_there(box):
    source = CHECKOUT / "services" / "environment" / "sandbox" / "run.py"
    assert source.stat().st_mode & 0o004  # world-readable on the host: only the sandbox's view keeps it out
    out = box.run(
        "import os\n"
        f"for path in ['{source}', '{CHECKOUT}', '/home', '/root', '/etc/passwd', '/usr/share']:\n"
        "    try:\n        print(path, open(path).read(20) if os.path.isfile(path) else os.listdir(path))\n"
        "    except OSError as err:\n        print(path, type(err).__name__)\n"
    )
    assert "Sandbox" not in out.stdout and out.exit_code == 0
    for path in [source, CHECKOUT, "/home", "/root", "/etc/passwd", "/usr/share"]:
        assert f"{path} FileNotFoundError" in out.stdout


@pytest.fixture
def dataset():
    """A world-readable dataset outside any run dir and outside /tmp (which the sandbox replaces)."""
    parent = next(d for d in ("/srv", "/opt", "/var/lib", "/var/tmp") if os.access(d, os.W_OK))
    folder = Path(tempfile.mkdtemp(prefix="meshrl-dataset-", dir=parent))
    folder.chmod(0o755)
    rows = folder / "train.jsonl"
    rows.write_text(json.dumps({"prompt": "2+2", "answer": SECRET}) + "\n")
    rows.chmod(0o644)
    yield rows
    rows.unlink()
    folder.rmdir()


@needs_namespaces
def test_a_dataset_outside_the_run_dir_cannot_be_read(box, dataset):
    out = box.run(f"print(open('{dataset}').read())")
    assert SECRET not in out.stdout + out.stderr and "FileNotFoundError" in out.stderr


@needs_namespaces
def test_the_interpreter_still_runs_the_standard_library(box):
    program = (
        "import math, json, decimal, fractions, statistics, re, collections, itertools, hashlib, zlib\n"
        "import datetime, sqlite3, subprocess, sys, tempfile\n"
        "print(math.factorial(10), json.dumps({'a': [1, 2]}), decimal.Decimal('0.1') + decimal.Decimal('0.2'))\n"
        "print(fractions.Fraction(1, 3) * 3, statistics.mean([1, 2, 3, 4]), re.findall(r'\\d+', 'a1b22'))\n"
        "print(collections.Counter('abca')['a'], list(itertools.accumulate([1, 2, 3])))\n"
        "print(hashlib.sha256(b'abc').hexdigest()[:8], len(zlib.compress(b'x' * 1000)) < 100)\n"
        "print(datetime.date(2024, 3, 1) - datetime.date(2024, 2, 1))\n"
        "print(sqlite3.connect(':memory:').execute('select 6 * 7').fetchone()[0])\n"
        "print(subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True, text=True).stdout.strip())\n"
        "with tempfile.NamedTemporaryFile('w+') as f:\n    f.write('kept'); f.seek(0); print(f.read())\n"
    )
    out = box.run(program)
    assert out.stderr == "" and out.exit_code == 0
    assert out.stdout.splitlines() == [
        '3628800 {"a": [1, 2]} 0.3',
        "1 2.5 ['1', '22']",
        "2 [1, 3, 6]",
        "ba7816bf True",
        "29 days, 0:00:00",
        "42",
        "7",
        "kept",
    ]


def test_unavailable_sandbox_refuses():
    box = Sandbox(LIMITS, Isolation("", "no namespaces (test)"))
    with pytest.raises(SandboxUnavailable, match="no namespaces"):
        box.run("print(1)")


@needs_namespaces
def test_a_private_umask_in_the_service_does_not_break_the_sandbox(sandbox):
    """meshrl's service runner sets umask 077 for its own files; the sandbox's root (its /dev
    nodes, its mount points) must not inherit it, or the program's uid can open none of them."""
    old = os.umask(0o077)
    try:
        outcome = sandbox.run("print(6 * 7)")
    finally:
        os.umask(old)
    assert outcome.exit_code == 0 and outcome.stdout == "42\n", outcome
