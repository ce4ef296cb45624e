"""A crafted checkpoint runs no code and is refused by every loader, whatever the run dir holds.

The attacker can write a run dir (a compromised service on a shared volume, a checkpoint
copied from elsewhere) but not the user's checkpoint key (MESHRL_CHECKPOINT_KEY_FILE: here
the session's, tests/conftest.py). The payload is a pickle of protocol 4 whose dotted name
goes through torch.distributed.checkpoint.metadata to its `os`, to os.system("touch MARKER"):
what the old allow-list admitted. The run dirs attacked:

- payload-unsigned: the payload in every file of a checkpoint (tags.json too), the manifest's
  unkeyed hashes redone, its signature dropped, RUN_DIR/keys removed;
- payload-own-key: the same, re-signed with the attacker's own key, put in RUN_DIR/keys;
- legacy-metadata / legacy-pt: an older meshrl's checkpoint (dcp/, .pt) with the payload as
  dcp/.metadata, or as schedulers.pt and rng/rank_0.pt;
- weights-unsigned / weights-own-key: one weight altered (valid safetensors, no payload),
  unsigned with the keys removed, or re-signed with the attacker's key (only the signature
  stops these: without it they load).

Loaders: the learner's resume (LearnerCheckpoints.restore_if_any), `meshrl export`, `meshrl
eval` and `meshrl rollback` as subprocesses, the gateway's ExportRun and ListCheckpoints over
its real HTTP API. Each refuses in one line, and no marker appears. Then a checkpoint signed
with the user's own key but holding the payload in one file (an insider; the signature
cannot help): every loader still refuses, as no file is read by anything but JSON and
safetensors.

Run: .venv/bin/python -m pytest tests/security/test_checkpoint_attacks.py -q
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import aiohttp
import pytest
import pytest_asyncio
import torch

from meshrl.config.load import load_config
from meshrl.inputs.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from meshrl.inputs.checkpoint.export import export_hf
from meshrl.inputs.checkpoint.key import signer_for_save
from meshrl.inputs.checkpoint.manifest import data_files, hash_files, write_signed
from meshrl.security.run_key import create_run_keys, signer_from_env
from meshrl.services.learner.checkpointing import LearnerCheckpoints
from tests.fixtures.gateway import gateway_for
from tests.unit.inputs.checkpoint.conftest import tokenizer_dir  # noqa: F401 (fixture: a tokenizer dir)
from tests.unit.inputs.checkpoint.helpers import tiny_model, trainer
from tests.unit.inputs.checkpoint.legacy_writer import write_legacy

CLI = [sys.executable, "-m", "meshrl.cli.main"]
OPERATOR = "operator-token-0123456789"
PAYLOAD_RUNS = ("payload-unsigned", "payload-own-key", "legacy-metadata", "legacy-pt")
WEIGHT_RUNS = ("weights-unsigned", "weights-own-key")


def payload(marker: Path) -> bytes:
    """PROTO 4; module and dotted name; STACK_GLOBAL; the command; TUPLE1; REDUCE; STOP."""

    def text(s: str) -> bytes:
        return b"\x8c" + bytes([len(s.encode())]) + s.encode()

    return (
        b"\x80\x04"
        + text("torch.distributed.checkpoint.metadata")
        + text("os.system")
        + b"\x93"
        + text(f"touch {marker}")
        + b"\x85R."
    )


def saved(run: Path, step: int = 1) -> Path:
    model = tiny_model()
    optimizer, scheduler = trainer(model)
    config = {"model": {"path": str(run / "no-model")}}
    return save_checkpoint(
        run,
        step,
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        state={"step": step},
        config_hash="x",
        config=config,
    )


def resign(ckpt: Path, signer=None) -> None:
    """What the attacker does after changing files: the manifest's hashes redone, signed or not."""
    body = json.loads((ckpt / "manifest.json").read_text())
    body["files"] = hash_files(ckpt, data_files(ckpt))
    if signer is None:
        body.pop("signature", None)
        from meshrl.inputs.checkpoint.manifest import _self_hash

        body["manifest_sha256"] = _self_hash(body)
        (ckpt / "manifest.json").write_text(json.dumps(body))
    else:
        write_signed(ckpt, body, signer)


def attackers_own_key(run: Path):
    """A key pair the attacker makes in RUN_DIR/keys, where the old reader looked for the run's key."""
    keys = create_run_keys(run)
    return signer_from_env({"MESHRL_RUN_SIGNING_KEY_FILE": str(keys.private)})


def payload_everywhere(ckpt: Path, marker: Path) -> None:
    for name in data_files(ckpt) + ["tags.json"]:
        (ckpt / name).write_bytes(payload(marker))


def flip_a_weight(ckpt: Path) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(ckpt / "model" / "policy.safetensors")
    weights["model.norm.weight"][0] += 1.0
    save_file(weights, ckpt / "model" / "policy.safetensors")


def legacy(run: Path, marker: Path, files: tuple[str, ...]) -> None:
    model = tiny_model()
    ckpt = write_legacy(run, 1, model, *trainer(model), {"step": 1})
    for name in files:
        (ckpt / name).write_bytes(payload(marker))
    resign(ckpt)


def craft(run: Path, how: str, marker: Path) -> None:
    (run / "config.yaml").write_text(f"run: {{name: {run.name}}}\n")
    if how.startswith("legacy"):
        return legacy(
            run, marker, ("dcp/.metadata",) if how == "legacy-metadata" else ("schedulers.pt", "rng/rank_0.pt")
        )
    ckpt = saved(run)
    payload_everywhere(ckpt, marker) if how.startswith("payload") else flip_a_weight(ckpt)
    if how.endswith("own-key"):
        resign(ckpt, attackers_own_key(run))
    else:
        create_run_keys(run)
        shutil.rmtree(run / "keys")
        resign(ckpt)


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """ROOT/<attack> for each attack, and the marker the payload would touch."""
    root = tmp_path_factory.mktemp("runs")
    marker = root.parent / "attacker-was-here"
    for how in PAYLOAD_RUNS + WEIGHT_RUNS:
        (root / how).mkdir()
        craft(root / how, how, marker)
    return root, marker


def test_the_payload_is_live(tmp_path):
    """The attack is real: unpickled, it runs the command (so its absence below means something)."""
    import pickle

    pickle.loads(payload(tmp_path / "ran"))
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("how", PAYLOAD_RUNS + WEIGHT_RUNS)
def test_the_learners_resume_refuses(attacked, how, tmp_path):
    root, marker = attacked
    model = tiny_model(seed=1)
    before = [p.detach().clone() for p in model.parameters()]
    policy = SimpleNamespace(model=model, optimizer=trainer(model)[0], scheduler=trainer(model)[1])
    cfg = load_config(
        base={"run": {"dir": str(tmp_path / "resumer")}, "model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
    )
    learner = LearnerCheckpoints(cfg, policy)
    with pytest.raises(CheckpointError) as refused:
        learner.restore_if_any(root / how)
    assert "\n" not in str(refused.value) and not marker.exists()
    assert _names_the_fix(str(refused.value), how)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def _names_the_fix(message: str, how: str) -> bool:
    if how.startswith("legacy"):
        return "older meshrl" in message and "meshrl checkpoints convert" in message
    return "untrusted checkpoint" in message and "--i-trust-this-file" in message


@pytest.mark.parametrize(
    "how,command",
    [(h, c) for h in PAYLOAD_RUNS for c in ("export", "eval", "rollback")] + [(h, "export") for h in WEIGHT_RUNS],
)
def test_the_cli_refuses(attacked, how, command, tmp_path):
    root, marker = attacked
    run = root / how
    argv = {
        "export": ["export", str(run), str(tmp_path / "out")],
        "eval": ["eval", str(run), str(tmp_path / "rows.jsonl")],
        "rollback": ["rollback", str(run), "--to", "1"],
    }[command]
    done = subprocess.run(CLI + argv, capture_output=True, text=True, timeout=180)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert _names_the_fix(done.stderr, how) and not marker.exists()
    assert not (tmp_path / "out").exists()


@pytest_asyncio.fixture(loop_scope="module")
async def gateway(attacked, tmp_path):
    root, _ = attacked
    gw = await gateway_for(root, tmp_path, olga=("operator", OPERATOR))
    async with aiohttp.ClientSession(
        f"http://127.0.0.1:{gw.http_port}", headers={"Authorization": f"Bearer {OPERATOR}"}
    ) as http:
        yield http
    await gw.stop()


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("how", PAYLOAD_RUNS + WEIGHT_RUNS)
async def test_the_gateway_refuses(attacked, gateway, how):
    root, marker = attacked
    async with gateway.post(f"/api/runs/{how}/export", json={"step": 1}) as reply:
        status, body = reply.status, await reply.text()
    assert status == 400 and _names_the_fix(body, how) and not marker.exists()
    assert not (root / how / "exports").exists()
    async with gateway.get(f"/api/runs/{how}/checkpoints") as reply:
        rows = (await reply.json())["checkpoints"]
    assert [(int(r["step"]), r["status"]) for r in rows] == [(1, "corrupt")] and _names_the_fix(rows[0]["reason"], how)
    assert not marker.exists()


def _insider(run: Path, name: str, marker: Path) -> Path:
    """Every file of a good checkpoint but one, which holds the payload; signed with the user's key."""
    ckpt = saved(run)
    (ckpt / name).write_bytes(payload(marker))
    resign(ckpt, signer_for_save())
    return ckpt


FILES = (
    "model/policy.safetensors",
    "optim/policy.safetensors",
    "optim/policy.json",
    "rng/rank_0.safetensors",
    "rng/rank_0.json",
    "schedulers.json",
    "state.json",
    "config.json",
    "hf_config/config.json",  # export's alone
)


@pytest.mark.parametrize("name", FILES)
def test_a_signed_checkpoint_holding_a_pickle_is_still_refused(tmp_path, name):
    marker = tmp_path / "attacker-was-here"
    ckpt = _insider(tmp_path / "run", name, marker)
    same = {"model": {"path": str(tmp_path / "run" / "no-model")}}  # the saved config: compatible
    model = tiny_model(seed=1)
    optimizer, scheduler = trainer(model)
    if not name.startswith("hf_config/"):
        with pytest.raises(CheckpointError, match=f"{name}: not a readable"):
            load_checkpoint(ckpt, model=model, optimizer=optimizer, scheduler=scheduler, new_config=same)
    if name.startswith(("model/", "hf_config/")) or name == "config.json":
        with pytest.raises(CheckpointError, match=f"{name}: not a readable"):
            export_hf(ckpt, tmp_path / "exported", tokenizer_dir=tmp_path)
    assert not marker.exists()


def test_a_whole_resume_and_export_unpickle_nothing(tmp_path, monkeypatch, tokenizer_dir):  # noqa: F811
    """Every way to unpickle, made to fail: a good checkpoint still resumes and exports."""
    import pickle

    ckpt = saved(tmp_path / "run")

    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)  # noted, in case a caller swallows the error
        raise AssertionError("a checkpoint loader unpickled something")

    for owner, name in ((pickle, "load"), (pickle, "loads"), (pickle, "Unpickler"), (torch, "load")):
        monkeypatch.setattr(owner, name, refuse)
    model = tiny_model(seed=1)
    optimizer, scheduler = trainer(model)
    assert load_checkpoint(ckpt, model=model, optimizer=optimizer, scheduler=scheduler) == {"step": 1}
    assert (export_hf(ckpt, tmp_path / "exported", tokenizer_dir=tokenizer_dir) / "model.safetensors").is_file()
    assert calls == []
