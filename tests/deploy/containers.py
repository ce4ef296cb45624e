"""Containers a test starts with podman, labelled so that the test removes exactly its own.

    with Containers("mesh-1a2b") as box:
        box.run("nats", image, ["nats-server", ...], network="host", read_only=True)
        box.logs("nats"); box.state("nats")["Status"]; box.kill_process("nats")
        box.health("nats")            # runs the image's HEALTHCHECK now: "healthy" / "unhealthy: why"

No systemd here, so podman cannot schedule HEALTHCHECKs by itself: `health` runs the check the
image (or --health-cmd) declares, as the timer would (`podman healthcheck run`).
"""

from __future__ import annotations

import json
import os
import signal
import time

from tests.fixtures.images import podman


class Containers:
    def __init__(self, label: str):
        self.label = label
        self.names: list[str] = []

    def name(self, short: str) -> str:
        return f"{self.label}-{short}"

    def run(
        self,
        short: str,
        image: str,
        command: list[str],
        *,
        env: dict[str, str] | None = None,
        mounts: list[str] = (),
        options: list[str] = (),
    ) -> str:
        """podman run -d: `mounts` are --volume specs, `options` any other podman run flags."""
        name = self.name(short)
        args = ["run", "-d", "--name", name, "--label", f"meshrl-test={self.label}", "--hostname", short]
        for key, value in (env or {}).items():
            args += ["--env", f"{key}={value}"]
        for mount in mounts:
            args += ["--volume", mount]
        podman(*args, *options, image, *command)
        self.names.append(name)
        return name

    def state(self, short: str) -> dict:
        return json.loads(podman("inspect", "--type", "container", self.name(short)).stdout)[0]["State"]

    def restarts(self, short: str) -> int:
        return int(podman("inspect", "--type", "container", "--format", "{{.RestartCount}}", self.name(short)).stdout)

    def logs(self, short: str, tail: int = 60) -> str:
        done = podman("logs", "--tail", str(tail), self.name(short), check=False)
        return done.stdout + done.stderr

    def exec(self, short: str, argv: list[str]):
        return podman("exec", self.name(short), *argv, check=False, timeout=60)

    def health(self, short: str, retries: int = 3) -> str:
        """ "healthy" when one of `retries` checks in a row passes: a runtime calls a container
        unhealthy only after the image's HEALTHCHECK --retries (3) failures in a row, and one
        check can time out on a loaded host. Otherwise why the last one failed."""
        for _ in range(retries):
            if podman("healthcheck", "run", self.name(short), check=False, timeout=60).returncode == 0:
                return "healthy"
        probe = podman(
            "exec",
            self.name(short),
            "sh",
            "-c",
            'meshrl health "$MESHRL_HEALTH_ADDRESS" --timeout 4',
            check=False,
            timeout=60,
        )
        return f"unhealthy: {probe.stdout}{probe.stderr}".strip()

    def kill_process(self, short: str) -> int:
        """SIGKILL the container's main process from the host, as a crash or the OOM killer
        would (not `podman kill`/`stop`, which a restart policy rightly leaves stopped)."""
        pid = int(self.state(short)["Pid"])
        os.kill(pid, signal.SIGKILL)
        return pid

    def wait_for(self, condition, timeout_s: float, what: str, show: tuple[str, ...] = ()) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            for short in show:
                status = self.state(short)
                if status["Status"] == "exited" and not status.get("Restarting"):
                    raise AssertionError(
                        f"{short} exited ({status['ExitCode']}) while waiting for {what}:\n{self.logs(short)}"
                    )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}\n" + "\n".join(f"--- {s}\n{self.logs(s, 30)}" for s in show)
                )
            time.sleep(1)

    def remove_all(self) -> None:
        podman("rm", "-f", "-t", "5", *self.names, check=False, timeout=180) if self.names else None

    def __enter__(self) -> "Containers":
        return self

    def __exit__(self, *exc) -> None:
        self.remove_all()
