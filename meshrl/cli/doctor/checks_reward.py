"""External reward services: each `kind: external` component's address answers grpc.health.v1
SERVING within a short timeout (meshrl.transport.rpc.wait_healthy). One result per component."""

from __future__ import annotations

from meshrl.cli.doctor.check import Check, failed, passed, run_async, skipped

HEALTH_TIMEOUT_S = 2.0


def _check_one(component, timeout_s: float) -> Check:
    from meshrl.transport.rpc import (
        ServiceUnhealthy,
        wait_healthy,
    )  # lazy: grpc, only when this check runs (--skip rewards)

    name = f"external reward {component.name!r}"
    if not component.address:
        return failed(
            name, "kind 'external' but no address", f"set address: host:port on reward component {component.name!r}"
        )
    try:
        run_async(wait_healthy(component.address, timeout=timeout_s))
    except ServiceUnhealthy as err:
        return failed(
            name,
            str(err).split(": is the service")[0],
            f"start the reward service at {component.address} (it must serve meshrl.reward.v1."
            f"RewardService and grpc.health.v1) or fix the address of component {component.name!r}",
        )
    return passed(name, f"{component.address} is SERVING")


def check_external_rewards(ctx) -> list[Check]:
    if ctx.config is None:
        return [skipped("external rewards", "no config given")]
    externals = [c for c in ctx.config.reward.components if c.kind == "external"]
    if not externals:
        return [skipped("external rewards", "no kind: external reward components in the config")]
    return [_check_one(c, ctx.reward_timeout_s) for c in externals]
