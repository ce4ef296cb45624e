"""The pip configuration an image build needs, taken from this host's pip, and the local paths
it names: deploy/image/build.sh passes the file to the build as a secret (it never becomes a
layer) and bind-mounts the paths read-only at the same place (wheel dirs, file:// indexes, the
CA bundle, constraint files), so pip inside the build resolves exactly as pip here does.

    python3 deploy/image/pip_build_config.py --out /tmp/pip.conf        # prints the paths to mount
    python3 deploy/image/pip_build_config.py --from my-pip.conf --out /tmp/pip.conf
    python3 deploy/image/pip_build_config.py --check-index --out /tmp/pip.conf   # + is the index reachable?

The configuration is `pip config list` of the host's pip (files and PIP_* variables; a
variable wins over a file, as in pip), or the file given with --from. --check-index asks the
index (index-url, default PyPI) for a page within 15 s and exits 2 with one line naming it when
it cannot, instead of the build retrying for minutes.
"""

from __future__ import annotations

import argparse
import configparser
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

PATH_KEYS = ("find-links", "extra-index-url", "index-url", "constraint", "cert", "client-cert")
DEFAULT_INDEX = "https://pypi.org/simple"
LINE = re.compile(r"^(?P<section>[^.]*)\.(?P<key>[^=]+)='(?P<value>.*)'$")


def host_config() -> configparser.ConfigParser:
    """What the host's pip uses: `pip config list`, PIP_* variables (`:env:`) over files."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    config = configparser.ConfigParser(interpolation=None)
    entries = [m.groupdict() for m in map(LINE.match, listed.splitlines()) if m]
    for entry in sorted(entries, key=lambda e: e["section"] == ":env:"):  # variables last: they win
        section = "global" if entry["section"] == ":env:" else entry["section"]
        config.setdefault(section, {})[entry["key"]] = entry["value"]
    return config


def file_config(path: Path) -> configparser.ConfigParser:
    config = configparser.ConfigParser(interpolation=None)
    if not config.read(path):
        raise SystemExit(f"pip_build_config: cannot read {path}")
    return config


def local_paths(config: configparser.ConfigParser) -> list[Path]:
    """Existing local paths the configuration names; a file:// index's parent folder, since
    its pages link to the wheels beside `simple/` (../../files/...)."""
    found = []
    for section in config.sections():
        for key in PATH_KEYS:
            for value in config[section].get(key, "").split():
                path = Path(value.removeprefix("file://"))
                if value.startswith("file://") and key.endswith("index-url"):
                    path = path.parent
                if path.is_absolute() and path.exists() and path not in found:
                    found.append(path)
    return found


def check_index(config: configparser.ConfigParser) -> str | None:
    """None when the index answers, else one line saying which index and why not."""
    index = next((config[s]["index-url"] for s in config.sections() if config[s].get("index-url")), DEFAULT_INDEX)
    index = index.split()[0].rstrip("/")
    if index.startswith("file://"):
        return None if Path(index.removeprefix("file://")).is_dir() else f"the package index {index} does not exist"
    cert = next((config[s]["cert"] for s in config.sections() if config[s].get("cert")), None)
    context = ssl.create_default_context(cafile=cert)
    try:
        urllib.request.urlopen(f"{index}/pip/", timeout=15, context=context).close()
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        return (
            f"the package index {index} cannot be reached ({reason}): set index-url in the pip "
            "configuration (--pip-conf FILE) to one that answers, or fix the proxy"
        )
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", type=Path, help="a pip.conf to use instead of the host's pip")
    parser.add_argument("--out", type=Path, required=True, help="where to write the build's pip.conf")
    parser.add_argument("--check-index", action="store_true", help="exit 2 when the index does not answer")
    args = parser.parse_args(argv)
    config = file_config(args.source) if args.source else host_config()
    with args.out.open("w") as out:
        config.write(out)
    if args.check_index and (problem := check_index(config)):
        print(f"build.sh: {problem}", file=sys.stderr)
        return 2
    print("\n".join(str(p) for p in local_paths(config)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
