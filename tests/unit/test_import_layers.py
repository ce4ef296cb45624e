"""The house's import contracts hold (pyproject's [tool.importlinter], checked by the real
lint-imports on the tree as installed), and they catch what they are there to catch: a
service importing the launcher, a service importing another service, the ground importing
the middle floor.

    .venv/bin/python -m pytest -q tests/unit/test_import_layers.py
"""

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("lint_imports", REPO / "scripts" / "lint_imports.py")
lint_imports = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lint_imports)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return lint_imports.lay_out(REPO, tmp_path_factory.mktemp("tree"))


def test_the_repository_keeps_every_contract(tree):
    result = lint_imports.lint_imports(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout
    assert (tree / "meshrl" / "services" / "learner" / "loop.py").is_file()  # the services are in the graph


@pytest.mark.parametrize(
    "importer, line, broken",
    [
        (
            "services/learner/loop.py",
            "from meshrl.launch import keeper",
            "meshrl.services is not allowed to import meshrl.launch",
        ),
        (
            "services/reward/main.py",
            "from meshrl.services.rollout import engine",
            "meshrl.services.reward is not allowed to import meshrl.services.rollout",
        ),
        (
            "gateway/api/handlers.py",
            "from meshrl.services.learner import control",
            "meshrl.gateway is not allowed to import meshrl.services.learner",
        ),
        (
            "meshrl/transport/rpc/server.py",
            "from meshrl.run import audit",
            "meshrl.transport is not allowed to import meshrl.run",
        ),
        (
            "meshrl/config/schema.py",
            "from meshrl.telemetry import metrics",
            "meshrl.config is not allowed to import meshrl.telemetry",
        ),
    ],
)
def test_an_import_against_the_contracts_is_reported(tmp_path, importer, line, broken):
    tree = lint_imports.lay_out(REPO, tmp_path)
    target = tree / "meshrl" / importer.removeprefix("meshrl/")
    target.write_text(target.read_text() + f"\n\ndef _late():\n    {line}  # function-level imports count\n")
    result = lint_imports.lint_imports(tree)
    assert result.returncode == 1
    assert broken in result.stdout, result.stdout


def test_every_folder_of_the_core_package_is_on_a_floor():
    """A new folder (or top-level module) of meshrl/ that no floor names would be unchecked."""
    import tomllib

    layers = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    named = {name.strip().removeprefix("meshrl.") for layer in layers for name in re.split(r"[|:]", layer)}
    on_disk = {p.name for p in (REPO / "meshrl").iterdir() if (p / "__init__.py").is_file()}
    on_disk |= {p.stem for p in (REPO / "meshrl").glob("*.py") if p.stem != "__init__"}
    assert on_disk | {"gateway", "services"} == named


def test_every_service_is_independent_of_the_others():
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    independent = set(contracts[1]["modules"])
    services = {f"meshrl.services.{p.name}" for p in (REPO / "services").iterdir() if (p / "__init__.py").is_file()}
    assert services | {"meshrl.gateway"} == independent
