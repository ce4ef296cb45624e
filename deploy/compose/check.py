"""Say what a compose run still lacks, one line each with its fix, before `compose up` meets it
as a cascade of engine errors: the files make_nats_auth.py makes (there, and readable by the
image's uid 10001), the model and data the run config reads from MESHRL_DATA_DIR, the meshrl
image (built by deploy/image/build.sh, not by compose), a NATS image this host has or can
pull, and a compose tool.

    .venv/bin/python deploy/compose/check.py      # "ready: ..." and exit 0, or one line per problem and exit 2

It reads the variables compose.yaml reads (MESHRL_IMAGE, MESHRL_NATS_IMAGE, MESHRL_DATA_DIR);
--engine names podman or docker (default: podman when installed). Simplification: file owners
are checked only when run as root (a rootful engine; rootless podman maps uid 10001 elsewhere).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
IMAGE_UID = 10001  # deploy/image/Dockerfile's USER
MAKE_FILES = "sudo .venv/bin/python deploy/compose/make_nats_auth.py"


def secret_problems(compose_dir: Path) -> list[str]:
    """Every top-level secret file compose mounts: there and, as root, the image user's."""
    compose = yaml.safe_load((compose_dir / "compose.yaml").read_text())
    problems, missing = [], []
    for name, secret in compose["secrets"].items():
        path = (compose_dir / secret["file"]).resolve()
        if not path.is_file():
            missing.append(name)
        elif os.geteuid() == 0 and path.stat().st_uid != IMAGE_UID and not path.stat().st_mode & 0o004:
            problems.append(
                f"secret {name}: {path} is not readable by the image's uid {IMAGE_UID}: run `{MAKE_FILES}` "
                f"again (it hands the files over), or `chown {IMAGE_UID} {path}`"
            )
    if missing:
        problems.insert(
            0, f"secrets missing in {compose_dir}: {', '.join(missing)}: run `{MAKE_FILES}` (it makes them all)"
        )
    return problems


def data_problems(compose_dir: Path, data_dir: Path) -> list[str]:
    """The model and data files compose's run config names under /data, in MESHRL_DATA_DIR."""
    cfg = yaml.safe_load((compose_dir / "run-config.yaml").read_text())
    wanted = {"model.path": cfg["model"]["path"], "data.train": cfg["data"]["train"]}
    fixes = {
        "model.path": f"`meshrl models fetch-smollm2 --cache-dir {data_dir}/models`",
        "data.train": f"`meshrl data arithmetic --out {data_dir}/arith_train.jsonl --n 512`",
    }
    problems = []
    for key, inside in wanted.items():
        host = data_dir / Path(inside).relative_to("/data")
        if not host.exists():
            problems.append(
                f"{key} {inside}: {host} is missing (MESHRL_DATA_DIR={data_dir}): make it with {fixes[key]}"
            )
    return problems


def image_problems(engine: str, env) -> list[str]:
    """The meshrl image (never built by compose here) and a NATS image that can be had."""
    if not shutil.which(engine):
        return [f"{engine} is not installed: `sudo bash deploy/image/install-podman.sh` installs podman"]
    problems = []
    image = env.get("MESHRL_IMAGE") or "meshrl:cpu"
    if not has_image(engine, image):
        problems.append(
            f"image {image} is not here: build it with `bash deploy/image/build.sh --variant cpu --tag {image}` "
            "(add --make-base where Docker Hub cannot be reached), then `up` without --build"
        )
    nats = env.get("MESHRL_NATS_IMAGE") or "nats:2.11-alpine"
    if not has_image(engine, nats) and not reachable(registry_of(nats)):
        problems.append(
            f"NATS image {nats} is not here and {registry_of(nats)} cannot be reached: "
            f"set MESHRL_NATS_IMAGE={image} (the meshrl image has nats-server)"
        )
    return problems


def podman_compose() -> str | None:
    """How to call podman-compose here: on PATH, or meshrl's .venv's; None without one."""
    if shutil.which("podman-compose"):
        return "podman-compose"
    return ".venv/bin/podman-compose" if (ROOT / ".venv" / "bin" / "podman-compose").exists() else None


def compose_problems(engine: str) -> list[str]:
    """A compose tool: podman-compose (meshrl's .venv has it) or docker's compose plugin."""
    if podman_compose():
        return []
    if engine == "docker" and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return []
    return [
        "no compose tool: `bash scripts/setup.sh` puts podman-compose in .venv/bin, or `pip install podman-compose`"
    ]


def has_image(engine: str, name: str) -> bool:
    return subprocess.run([engine, "image", "inspect", name], capture_output=True, timeout=60).returncode == 0


def registry_of(image: str) -> str:
    """The registry host of an image name (docker.io when the name has none), as build.sh reads it."""
    first = image.split("/", 1)[0]
    named = "/" in image and ("." in first or ":" in first or first == "localhost")
    return first if named else "docker.io"


def reachable(registry: str) -> bool:
    """Any HTTP answer from the registry's /v2/ (401 included) means it is there."""
    host = "registry-1.docker.io" if registry == "docker.io" else registry
    try:
        urllib.request.urlopen(f"https://{host}/v2/", timeout=10)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def main(argv: list[str] | None = None, env=os.environ) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", default="podman" if shutil.which("podman") else "docker", help="podman or docker")
    p.add_argument("--compose-dir", type=Path, default=HERE, help=argparse.SUPPRESS)  # tests: a copy
    args = p.parse_args(argv)
    data_dir = Path(env.get("MESHRL_DATA_DIR") or ROOT / "data").resolve()
    problems = [
        *secret_problems(args.compose_dir),
        *data_problems(args.compose_dir, data_dir),
        *image_problems(args.engine, env),
        *compose_problems(args.engine),
    ]
    for problem in problems:
        print(f"compose check: {problem}", file=sys.stderr)
    if problems:
        return 2
    tool = podman_compose() or "docker compose"
    settings = " ".join(f"{name}={shlex.quote(value)}" for name, value in compose_settings(args.compose_dir, env))
    print(
        f"ready: MESHRL_DATA_DIR={data_dir} {settings}{' ' if settings else ''}{tool} -f deploy/compose/compose.yaml up -d (no --build)"
    )
    return 0


def compose_settings(compose_dir: Path, env) -> list[tuple[str, str]]:
    """The variables compose.yaml reads that are set here, but MESHRL_DATA_DIR (printed resolved):
    the ready line is copied into other shells, where a lost MESHRL_NATS_IMAGE pulls from Docker
    Hub and a lost MESHRL_CONFIG_OVERRIDES starts a 20-step run."""
    names = sorted(set(re.findall(r"\$\{(MESHRL_[A-Z_]+)", (compose_dir / "compose.yaml").read_text())))
    return [(name, env[name]) for name in names if env.get(name) and name != "MESHRL_DATA_DIR"]


if __name__ == "__main__":
    sys.exit(main())
