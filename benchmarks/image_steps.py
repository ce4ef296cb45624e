"""Steps per minute of the tiny run from the image vs the same run from the venv (issue 24).

The run is tests/deploy/test_image_mesh.py's (the tiny random Llama, GRPO with the reference
service, 4 prompts x 8 samples of 8 tokens, objectstore weights), --steps steps, run from:
- venv: `meshrl train CONFIG` from this checkout's .venv: the launcher starts NATS and every
  service as processes on this host (its own ports; the config's fixed ports and addresses,
  which the containers need, are left out);
- image: NATS, learner, reference, reward (`none` image) and rollout (`cpu` image) each in its
  own podman container, started as the mesh test starts them (uid 10001, read-only root,
  --network host on loopback addresses), without the test's SIGKILL, and with the threads the
  launcher would give each service on this host (meshrl.launch.cores), so that the two runs
  differ only in where the services run.
Steps per minute = (steps - 1) / (time of the last step - time of the first) x 60, from the
run's metrics.jsonl: the first step waits for every service to start, so it is left out.
--rounds N alternates venv and image N times (the machine's load changes between runs) and
prints each run, the median of each side and the ratio of the medians.

    sudo .venv/bin/python benchmarks/image_steps.py --steps 30 --rounds 3   # builds the images if needed
    sudo .venv/bin/python benchmarks/image_steps.py --steps 30 --only venv
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from meshrl.inputs.data.arithmetic import arithmetic_rows  # noqa: E402
from meshrl.inputs.data.load import write_rows  # noqa: E402
from meshrl.inputs.models.tiny import build_tiny_model_dir  # noqa: E402
from meshrl.launch.cores import plan_cores, usable_cores  # noqa: E402
from tests.deploy.containers import Containers  # noqa: E402
from tests.deploy.test_image_mesh import ImageMesh, mesh_config  # noqa: E402
from tests.fixtures.images import ImageBuilds, podman  # noqa: E402

LOOPBACK = {name: "127.0.0.1" for name in ("nats", "learner", "rollout", "reward", "reference")}
SIDES = ("venv", "image")


def steps_per_minute(metrics: Path) -> tuple[int, float]:
    rows = [json.loads(x) for x in metrics.read_text().splitlines() if x.strip()]
    span = rows[-1]["time"] - rows[0]["time"]
    return len(rows), (len(rows) - 1) / span * 60 if span > 0 else float("nan")


def venv_run(root: Path, model: Path, train: Path, steps: int, images: dict[str, str]) -> Path:
    cfg = mesh_config(LOOPBACK, str(root / "run"), steps)
    cfg["model"]["path"], cfg["data"]["train"] = str(model), str(train)
    for key in ("nats", "telemetry"):
        cfg.pop(key)
    cfg["reference"] = {}
    cfg["rollout"].pop("grpc_port")
    cfg["learner"].pop("grpc_port")
    config = root / "venv.yaml"
    config.write_text(yaml.safe_dump(cfg))
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "meshrl"), "train", str(config)], check=True, stdout=subprocess.DEVNULL
    )
    return root / "run" / "metrics.jsonl"


def launcher_threads(kind: str) -> dict[str, str]:
    """What meshrl's launcher gives `kind` on this host (reward keeps the mesh test's one thread)."""
    plan = plan_cores(usable_cores())
    return {"rollout": plan.rollout_env(), "learner": plan.trainer_env(), "reference": plan.trainer_env()}.get(kind, {})


def image_run(root: Path, model: Path, train: Path, steps: int, images: dict[str, str]) -> Path:
    with Containers(f"imgsteps-{uuid.uuid4().hex[:6]}") as box:
        mesh = ImageMesh(box, root, model, train, steps=steps)
        mesh.start_nats(images["none"])
        time.sleep(2)  # the services reconnect by themselves; this only spares their first retries
        for kind, variant in (("learner", "none"), ("rollout", "cpu"), ("reference", "none"), ("reward", "none")):
            mesh.start_service(kind, images[variant], threads=launcher_threads(kind))
        # podman wait blocks in podman itself: no inspect call to time out on a loaded host
        done = podman("wait", box.name("learner"), timeout=3600, check=False)
        if done.stdout.strip() != "0":
            raise SystemExit(f"the learner exited {done.stdout.strip()} {done.stderr.strip()}:\n{box.logs('learner')}")
    return mesh.run_dir / "metrics.jsonl"


def measure(side: str, root: Path, model: Path, train: Path, steps: int, images: dict[str, str]) -> dict:
    root.mkdir(parents=True)
    load, start = os.getloadavg()[0], time.monotonic()
    metrics = {"venv": venv_run, "image": image_run}[side](root, model, train, steps, images)
    count, rate = steps_per_minute(metrics)
    return {
        "side": side,
        "steps": count,
        "rate": rate,
        "wall": time.monotonic() - start,
        "load": (load, os.getloadavg()[0]),
    }


def report(runs: list[dict]) -> None:
    medians = {}
    for side in SIDES:
        rates = [r["rate"] for r in runs if r["side"] == side]
        if rates:
            medians[side] = statistics.median(rates)
            print(
                f"{side:6s} median {medians[side]:.2f} steps/min over {len(rates)} runs "
                f"(range {min(rates):.2f}-{max(rates):.2f})"
            )
    if len(medians) == 2:
        print(f"image / venv = {medians['image'] / medians['venv']:.2f} (ratio of the medians)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=1, help="alternating venv/image pairs")
    p.add_argument("--only", choices=SIDES)
    args = p.parse_args(argv)
    sides = [s for s in SIDES if args.only in (None, s)]
    builds = ImageBuilds()
    images = {v: builds(v) for v in ("none", "cpu")} if "image" in sides else {}
    runs = []
    with tempfile.TemporaryDirectory(prefix="image-steps-") as tmp:
        root = Path(tmp)
        model = build_tiny_model_dir(root / "model")
        train = write_rows(root / "train.jsonl", arithmetic_rows(128, seed=0))
        for n in range(args.rounds):
            for side in sides:
                run = measure(side, root / f"{side}-{n}", model, train, args.steps, images)
                runs.append(run)
                print(
                    f"{side:6s} round {n}: {run['steps']} steps, {run['rate']:.2f} steps/min after the first, "
                    f"{run['wall']:.0f} s start to finish, load {run['load'][0]:.1f} -> {run['load'][1]:.1f}",
                    flush=True,
                )
    report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
