"""Package layout: one distribution `meshrl`, every import under `meshrl`.

The service folders stay at the top of the repo (`services/rollout/`, `gateway/`) but are
installed as `meshrl.services.rollout` and `meshrl.gateway`, so nothing named `services`
lands in site-packages.
"""

from setuptools import find_packages, setup

ROOTS = {"meshrl": "meshrl", "meshrl.services": "services", "meshrl.gateway": "gateway"}


def packages_under(prefix: str, folder: str) -> list[str]:
    return [prefix] + [f"{prefix}.{name}" for name in find_packages(folder)]


setup(
    packages=[pkg for prefix, folder in ROOTS.items() for pkg in packages_under(prefix, folder)],
    package_dir=ROOTS,
)
