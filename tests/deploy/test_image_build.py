"""deploy/image/build.sh and the image it builds.

Fast (no build): the bad inputs a user can get wrong stop before anything is built, with one
line on stderr and exit 2: no variant, an unknown variant, a missing local base image, an
unreachable package index; the pip configuration names the local paths the build mounts.
The layer (CI's image check, MESHRL_IMAGE_TESTS=layer, the default; ≈2 min cold): the base and
meshrl's own stage of the Dockerfile built for real by build.sh (buildah, the pip
configuration as a secret): the package it installs imports from outside any source tree,
service and gateway packages included (the issue's first failure), holds exactly this tree's
sources, and a second build takes every step from the cache.
Slow (the session's image builds, tests/fixtures/images.py): the image runs `meshrl` as uid
10001 from outside any source tree, keeps neither the pip configuration nor the wheel dirs
nor the source, declares its HEALTHCHECK; a Dockerfile build with no VARIANT stops with one
line; a container without its environment exits 2 naming it; one given a wrong NATS
password file exits 2 without printing the password.

    .venv/bin/python -m pytest -q tests/deploy/test_image_build.py -m "not slow"
    .venv/bin/python -m pytest -q -s tests/deploy/test_image_build.py      # root; the layer; MESHRL_IMAGE_TESTS=1: builds once
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.deploy.containers import Containers
from tests.fixtures.images import (  # noqa: F401 (pytest fixtures, used by name)
    BASE,
    IMAGE_DIR,
    ROOT,
    meshrl_image,
    podman,
    podman_unavailable,
    require_image_tests,
)

BUILD = IMAGE_DIR / "build.sh"
sys.path.insert(0, str(IMAGE_DIR))
import pip_build_config  # noqa: E402 - deploy/image/pip_build_config.py


def build(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(BUILD), *args], capture_output=True, text=True, timeout=timeout)


def one_line_exit_2(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr.strip()


def test_a_build_without_a_variant_names_the_three():
    line = one_line_exit_2(build())
    assert line.startswith("build.sh: no engine variant named") and all(v in line for v in ("cpu", "cuda", "none"))


def test_help_prints_the_usage_comment_only():
    done = build("--help")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("deploy/image/build.sh: build the meshrl image")
    assert done.stdout.rstrip().endswith("before anything is built.")
    assert "set -euo" not in done.stdout and "#" not in done.stdout.splitlines()[0]


def test_an_unknown_variant_is_refused():
    assert "unknown variant 'gpu'" in one_line_exit_2(build("--variant", "gpu"))


def test_a_missing_local_base_image_says_how_to_make_it():
    reason = podman_unavailable()
    if reason:
        pytest.skip(reason)
    line = one_line_exit_2(build("--variant", "none", "--base", "localhost/meshrl-base:missing"))
    assert "base image localhost/meshrl-base:missing is missing" in line and "make-base.sh" in line


def test_a_base_from_a_registry_this_host_cannot_reach_says_to_add_make_base():
    """The first build command on a host without Docker Hub: the default base's registry is the
    one it cannot reach; here a registry address nothing answers on stands for it."""
    reason = podman_unavailable()
    if reason:
        pytest.skip(reason)
    line = one_line_exit_2(build("--variant", "none", "--base", "127.0.0.1:9/library/python:3.11-slim-bookworm"))
    assert (
        "base image 127.0.0.1:9/library/python:3.11-slim-bookworm is not here and 127.0.0.1:9 cannot be reached" in line
    )
    assert "add --make-base" in line


def test_an_unreachable_index_stops_the_build_at_once(tmp_path):
    reason = podman_unavailable()
    if reason:
        pytest.skip(reason)
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = http://127.0.0.1:9/simple\n")
    start = time.monotonic()
    line = one_line_exit_2(build("--variant", "none", "--pip-conf", str(conf)))
    assert "http://127.0.0.1:9/simple cannot be reached" in line
    assert time.monotonic() - start < 60  # not pip's minutes of retries


def test_the_build_mounts_what_the_pip_configuration_names(tmp_path):
    (tmp_path / "pypi" / "simple").mkdir(parents=True)
    (tmp_path / "wheels").mkdir()
    (tmp_path / "ca.pem").write_text("")
    conf = tmp_path / "pip.conf"
    conf.write_text(
        f"[global]\nextra-index-url = file://{tmp_path}/pypi/simple https://example.org/simple\n"
        f"find-links = {tmp_path}/wheels {tmp_path}/absent\ncert = {tmp_path}/ca.pem\n"
    )
    out = tmp_path / "out.conf"
    assert pip_build_config.main(["--from", str(conf), "--out", str(out)]) == 0
    # the index's parent (its pages link ../../files/), the wheel dir, the CA; not what is absent
    paths = pip_build_config.local_paths(pip_build_config.file_config(out))
    assert sorted(paths) == sorted([tmp_path / "pypi", tmp_path / "wheels", tmp_path / "ca.pem"])


# ---- the built image (slow) ----


@pytest.mark.slow
def test_the_image_runs_meshrl_as_10001_and_keeps_no_build_inputs(meshrl_image):
    image = meshrl_image("none")
    script = (
        "id -u; cd / && meshrl --help >/dev/null && echo cli-ok; "
        "ls -A /opt/wheels /opt/pypi 2>/dev/null | grep -v ':$' | grep -c . ; "
        "ls /run/secrets/pip.conf /etc/pip.conf /tmp/meshrl-src 2>&1 | grep -c 'No such file'; "
        "pip config list | grep -v '^:env:' | grep -c . ; "
        "python -c 'import meshrl, sys; print(meshrl.__file__)'"
    )
    done = podman("run", "--rm", "--network", "none", "--read-only", image, "sh", "-c", script)
    uid, cli, wheels_left, absent, config_lines, where = done.stdout.split()
    assert (uid, cli) == ("10001", "cli-ok")
    assert wheels_left == "0" and absent == "3" and config_lines == "0", done.stdout
    assert where.startswith("/opt/meshrl/lib/python3.11/site-packages/meshrl/")
    inspected = json.loads(podman("image", "inspect", image).stdout)[0]
    assert "meshrl health" in " ".join(inspected["Healthcheck"]["Test"])  # podman: beside Config
    assert inspected["Config"]["User"] == "10001:10001"


def packaged_sources() -> dict[str, str]:
    """sha256 of every .py file setup.py installs, by its path under site-packages."""
    digests = {}
    for prefix, folder in {"meshrl": "meshrl", "meshrl/services": "services", "meshrl/gateway": "gateway"}.items():
        for path in (ROOT / folder).rglob("*.py"):
            package = path.parent
            while package != ROOT / folder and (package / "__init__.py").exists():
                package = package.parent
            if package == ROOT / folder and (path.parent / "__init__.py").exists():
                digests[f"{prefix}/{path.relative_to(ROOT / folder)}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def stale_sources(installed: dict[str, str]) -> list[str]:
    """What differs between `installed` ({path under site-packages: sha256}) and this tree."""
    in_tree = packaged_sources()
    stale = {name for name in in_tree if installed.get(name) != in_tree[name]}
    return sorted(stale | (set(installed) - set(in_tree)))


@pytest.mark.slow
def test_the_image_holds_this_trees_code(meshrl_image):
    """Every source file as it is now: a code change reaches the image (buildah < 1.38 kept a
    bind-mounted RUN's cached layer whatever the files held, buildah#5400)."""
    script = (
        "import hashlib, pathlib, json, meshrl; root = pathlib.Path(meshrl.__file__).parent.parent; "
        "print(json.dumps({str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() "
        "for p in (root / 'meshrl').rglob('*.py')}))"
    )
    done = podman("run", "--rm", "--network", "none", "--entrypoint", "python3", meshrl_image("none"), "-c", script)
    stale = stale_sources(json.loads(done.stdout))
    assert not stale, f"the image holds other versions of (or lacks, or adds) {stale[:10]}"


# ---- meshrl's layer (CI) ----

LAYER_TAG = "localhost/meshrl:test-layer"


def build_layer() -> tuple[float, str]:
    start = time.monotonic()
    done = build(
        "--variant", "none", "--make-base", "--base", BASE, "--target", "meshrl-build", "--tag", LAYER_TAG, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return time.monotonic() - start, done.stdout


def installed_prefix(tmp_path: Path) -> Path:
    """/tmp/meshrl-install of the layer, copied out to the host."""
    name = f"meshrl-layer-{uuid.uuid4().hex[:6]}"
    podman("create", "--name", name, LAYER_TAG, "true")
    try:
        podman("cp", f"{name}:/tmp/meshrl-install", str(tmp_path / "install"))
    finally:
        podman("rm", "-f", name, check=False)
    return tmp_path / "install"


def uncached_steps(log: str) -> list[str]:
    """The build's RUN and COPY steps that ran instead of coming from the cache."""
    steps = log.split("STEP ")[1:]
    return [
        step.splitlines()[0]
        for step in steps
        if step.split(":", 1)[1].split()[0] in ("RUN", "COPY") and "Using cache" not in step
    ]


@pytest.mark.slow
def test_meshrl_layer_builds_and_its_package_imports_outside_a_source_tree(tmp_path):
    require_image_tests("layer")
    reason = podman_unavailable()
    if reason:
        pytest.skip(f"no container runtime: {reason}")
    first, _ = build_layer()
    again, log = build_layer()
    print(f"meshrl layer: built in {first:.0f} s, again in {again:.0f} s")
    assert "STEP" in log and not uncached_steps(log), uncached_steps(log)

    site = installed_prefix(tmp_path) / "lib" / "python3.11" / "site-packages"
    installed = {
        str(p.relative_to(site)): hashlib.sha256(p.read_bytes()).hexdigest() for p in (site / "meshrl").rglob("*.py")
    }
    assert not stale_sources(installed), stale_sources(installed)[:10]
    # this venv's dependencies, the layer's package first on the path, run from / (no source tree)
    script = (
        "import meshrl, meshrl.services.learner, meshrl.services.reward, meshrl.services.reference, "
        "meshrl.services.rollout, meshrl.gateway, meshrl.cli.main; "
        "print(meshrl.__file__, meshrl.services.__file__, meshrl.gateway.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", script], cwd="/", env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert all(path.startswith(str(site)) for path in done.stdout.split()), done.stdout
    cli = subprocess.run(
        [sys.executable, "-m", "meshrl.cli.main", "--help"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0 and "train" in cli.stdout, cli.stderr[-2000:]


@pytest.mark.slow
def test_a_dockerfile_build_without_variant_stops_with_one_line(meshrl_image, tmp_path):
    meshrl_image("none")  # the base exists and the first stage is cached
    # buildah 1.28 prunes stages by --build-arg values alone, so it reaches engine-unnamed
    # only when no stage is pruned (BuildKit finds it through the default; see the Dockerfile)
    done = subprocess.run(
        [
            "podman",
            "build",
            "--skip-unused-stages=false",
            "--network",
            "none",
            "-f",
            str(IMAGE_DIR / "Dockerfile"),
            "--ignorefile",
            str(IMAGE_DIR / "Dockerfile.dockerignore"),
            "--build-arg",
            f"BASE={BASE}",
            "-t",
            "localhost/meshrl:unnamed",
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0
    assert "no engine variant named: pass --build-arg VARIANT=cpu|cuda|none" in done.stderr


@pytest.mark.slow
def test_a_container_without_its_environment_or_with_a_wrong_secret_exits_2(meshrl_image, tmp_path):
    from tests.deploy.test_image_mesh import ImageMesh, own  # noqa: F401

    image = meshrl_image("none")
    missing = podman("run", "--rm", "--network", "none", image, "reward", check=False)
    assert missing.returncode == 2
    assert "missing MESHRL_NATS_URL MESHRL_RUN_ID MESHRL_CONFIG" in missing.stderr

    config = tmp_path / "config.yaml"
    config.write_text((ROOT / "deploy" / "compose" / "run-config.yaml").read_text())
    config.chmod(0o644)
    wrong = tmp_path / "nats-reward.json"
    password = f"p{uuid.uuid4().hex}"
    wrong.write_text(json.dumps({"user": "reward", "password": password}))
    with Containers(f"imgbad-{uuid.uuid4().hex[:6]}") as box:
        from tests.deploy.test_multihost_drill import nats_users

        users = nats_users(tmp_path / "users", "grpo-smollm2", config)
        for path in (users / "nats-auth.conf", wrong):
            subprocess.run(["chown", "10001:10001", str(path)], check=True)
        port = 14000 + uuid.uuid4().int % 1000
        box.run(
            "nats",
            image,
            ["nats-server", "--config", "/run/a.conf", "-a", "127.0.0.1", "-p", str(port)],
            mounts=[f"{users / 'nats-auth.conf'}:/run/a.conf:ro"],
            options=["--network", "host", "--no-healthcheck"],
        )
        time.sleep(2)
        done = podman(
            "run",
            "--rm",
            "--network",
            "host",
            "--read-only",
            "-v",
            f"{own(tmp_path / 'runs')}:/runs",
            "-e",
            f"MESHRL_NATS_URL=nats://127.0.0.1:{port}",
            "-e",
            "MESHRL_RUN_ID=grpo-smollm2",
            "-e",
            "MESHRL_CONFIG=/etc/meshrl/config.yaml",
            "-e",
            "MESHRL_NATS_CREDENTIALS_FILE=/run/s/nats.json",
            "-v",
            f"{config}:/etc/meshrl/config.yaml:ro",
            "-v",
            f"{wrong}:/run/s/nats.json:ro",
            image,
            "reward",
            "--grpc-port",
            "0",
            check=False,
            timeout=300,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refused user 'reward'" in done.stderr
    assert password not in done.stdout + done.stderr
