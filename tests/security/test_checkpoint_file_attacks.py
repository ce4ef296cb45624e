"""Checkpoint files that are not what they look like, found by an independent re-audit: a JSON
nesting bomb as the manifest or as tags.json (which no signature covers), a 100,000-digit
integer in the manifest, tags.json as a symlink to a secret shaped like tags, a run's exports/
a dangling symlink. Each loader answers in one line, exit 2 (no RecursionError traceback), the
gateway a 4xx (no 500), and no secret's value is shown.

Run: .venv/bin/python -m pytest tests/security/test_checkpoint_file_attacks.py -q
"""

from __future__ import annotations

import json
import os
import subprocess

import aiohttp
import pytest

from tests.fixtures.gateway import gateway_for
from tests.security.test_checkpoint_attacks import CLI, OPERATOR, resign, saved

BOMB = "[" * 200_000 + "]" * 200_000
SECRET = "s3cret-value"


def crafted(tmp_path, how: str):
    run = tmp_path / how
    ckpt = saved(run)
    if how == "manifest-bomb":
        (ckpt / "manifest.json").write_text(BOMB)
    elif how == "manifest-bigint":
        body = json.loads((ckpt / "manifest.json").read_text())
        (ckpt / "manifest.json").write_text(json.dumps(body)[:-1] + ', "n": ' + "9" * 100_000 + "}")
    elif how == "tags-bomb":  # tags.json is outside the manifest's hashes: the signature stays valid
        (ckpt / "tags.json").write_text(BOMB)
    elif how == "tags-symlink":
        secret = tmp_path / "secret.json"
        secret.write_text(json.dumps({"tags": [SECRET]}))
        os.symlink(secret, ckpt / "tags.json")
    return run


@pytest.mark.parametrize("how", ["manifest-bomb", "manifest-bigint", "tags-bomb", "tags-symlink"])
@pytest.mark.parametrize("command", ["export", "checkpoints-list"])
def test_a_crafted_file_is_one_line_and_shows_no_secret(tmp_path, how, command):
    run = crafted(tmp_path, how)
    argv = {
        "export": ["export", str(run), str(tmp_path / "out")],
        "checkpoints-list": ["checkpoints", "list", str(run)],
    }
    done = subprocess.run(CLI + argv[command], capture_output=True, text=True, timeout=180)
    out = done.stdout + done.stderr
    assert "Traceback" not in out and SECRET not in out, out[-2000:]
    if command == "export":
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    else:  # the list names the checkpoint and why it cannot be used
        assert done.returncode in (0, 2) and ("step_1" in out or "tags" in out), out[-2000:]


def test_an_unsigned_checkpoint_rolled_back_to_is_one_line(tmp_path):
    run = tmp_path / "run"
    resign(saved(run))  # hashes redone, signature dropped
    done = subprocess.run(CLI + ["rollback", str(run), "--to", "1"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]


async def test_an_export_into_a_dangling_exports_link_is_a_4xx(tmp_path):
    """A run dir's exports/ pointing nowhere: ExportRun answered 500 (FileExistsError naming the
    path); now 400, and nothing is written outside the run dir."""
    root = tmp_path / "runs"
    saved(root / "linked")
    (root / "linked" / "metrics.jsonl").write_text("")  # a run the gateway lists
    os.symlink(tmp_path / "elsewhere" / "x", root / "linked" / "exports")
    gw = await gateway_for(root, tmp_path, olga=("operator", OPERATOR))
    try:
        async with aiohttp.ClientSession(
            f"http://127.0.0.1:{gw.http_port}", headers={"Authorization": f"Bearer {OPERATOR}"}
        ) as http:
            async with http.post("/api/runs/linked/export", json={"step": 1}) as reply:
                status, body = reply.status, await reply.text()
    finally:
        await gw.stop()
    assert status == 400 and "cannot write the export" in body, (status, body)
    assert not (tmp_path / "elsewhere").exists()
