"""One root cause, one fix: an SDK environment whose Step observation carries the role
'assistant' (the SDK refuses to send it: INTERNAL) fails the contract row, and every other row
that failed by it points there instead of printing a concurrency or deadline fix."""

import grpc

from meshrl.cli.env_check import load_task, run_suite
from meshrl.cli.reward_check.table import FAIL
from meshrl.env_sdk import Environment, Message, Step, start, stop

CONTRACT = "answers follow the contract"


class SpeaksForTheModel(Environment):
    """Answers every turn with a message in the model's own role: against the contract."""

    def step(self, turn):
        return Step([Message("assistant", "I am the assistant now")])


async def test_rows_failed_by_a_refused_answer_point_at_the_contract_row():
    server, port = await start(SpeaksForTheModel, host="127.0.0.1")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            rows = await run_suite(channel, task=load_task(None, ""), timeout_s=10.0)
    finally:
        await stop(server, grace=0)
    contract = rows[-1]
    assert contract.check == CONTRACT and contract.outcome == FAIL
    assert "role 'assistant'; allowed: tool, user" in contract.detail and "a Step's tool or user" in contract.fix
    see = f"fails because answers break the contract: see row {len(rows)} ('{CONTRACT}') and fix that first"
    failed = {r.check: r.fix for r in rows[:-1] if r.outcome == FAIL}
    assert {"step", "concurrent episodes (8)", "deadline honoured (1 ms deadline)"} <= set(failed)
    assert set(failed.values()) == {see}, failed
