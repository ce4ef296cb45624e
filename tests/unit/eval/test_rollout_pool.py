"""RolloutPool spreads concurrent Generate calls over replicas and waits for a weights version.

The stubs here are fakes standing in for RolloutService replicas (the pool is under test;
the real server is exercised in tests/services/eval)."""

import asyncio

import pytest

from meshrl.api.rollout.v1 import rollout_pb2
from meshrl.eval import EvalUnavailable
from meshrl.eval.rollout_pool import RolloutPool


class FakeRolloutStub:
    def __init__(self, version=0):
        self.calls, self.version = 0, version

    async def Generate(self, request, timeout):
        self.calls += 1
        await asyncio.sleep(0.01)
        return rollout_pb2.GenerateResponse(policy_version=self.version)

    async def GetStatus(self, request, timeout):
        return rollout_pb2.GetStatusResponse(policy_version=self.version)


def pool_of(*stubs) -> RolloutPool:
    pool = RolloutPool([f"127.0.0.1:{9 + i}" for i in range(len(stubs))])  # channels never used
    for replica, stub in zip(pool.replicas, stubs):
        replica.stub = stub
    return pool


async def test_concurrent_calls_spread_evenly():
    stubs = [FakeRolloutStub(), FakeRolloutStub(), FakeRolloutStub()]
    pool = pool_of(*stubs)
    await asyncio.gather(*(pool.generate([], timeout_s=5) for _ in range(9)))
    assert [s.calls for s in stubs] == [3, 3, 3]
    for _ in range(2):  # one at a time: round robin, not always the first
        await pool.generate([], timeout_s=5)
    assert [s.calls for s in stubs] == [4, 4, 3]
    await pool.close()


async def test_wait_for_version_returns_once_all_hold_it_and_times_out_naming_laggards():
    fast, slow = FakeRolloutStub(2), FakeRolloutStub(1)
    pool = pool_of(fast, slow)

    async def catch_up():
        await asyncio.sleep(0.2)
        slow.version = 2

    await asyncio.gather(pool.wait_for_version(2, timeout_s=5, poll_s=0.05), catch_up())
    with pytest.raises(EvalUnavailable, match=r"older weights than version 3 .*127.0.0.1:9: v2"):
        await pool.wait_for_version(3, timeout_s=0.1, poll_s=0.05)
    await pool.close()


def test_no_replicas_is_a_clear_error():
    with pytest.raises(EvalUnavailable, match="no rollout replica"):
        RolloutPool([])
