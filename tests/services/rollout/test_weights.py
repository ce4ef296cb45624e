"""WeightsUpdater: notices → verified file → in-place load → WeightsLoaded (real vLLM engine).

Run: .venv/bin/python -m pytest tests/services/rollout/test_weights.py -m slow
"""

import hashlib
import shutil

import numpy as np
import pytest
from safetensors.torch import save_file

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from meshrl.transport.weights.update import WeightsUpdater
from tests.fixtures.vllm import hf_logprobs, perturbed_weights, prompt_task, tensor_digest

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture
def pushed(tiny_model_dir, tmp_path):
    """(state dict, file path, notice for version 1 over shm) of a perturbed checkpoint."""
    state = perturbed_weights(tiny_model_dir, scale=0.3, seed=3)
    path = tmp_path / "weights-v1.safetensors"
    save_file(state, str(path))
    data = path.read_bytes()
    notice = pb.WeightsNotice(
        run_id="test-run",
        version=1,
        transport="shm",
        location=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        format="safetensors",
        step=1,
    )
    return state, path, notice


def updater(engine, reports, **kw):
    async def publish(report):
        reports.append(report)

    return WeightsUpdater(engine, run_id="test-run", replica_id="rollout-test", publish_loaded=publish, **kw)


async def assert_serves(engine, tiny_model_dir, state) -> None:
    """The engine holds `state`: its embedding bytes, and greedy log-probs equal HF's on it."""
    assert await engine.weights_digest() == tensor_digest(state["model.embed_tokens.weight"])
    greedy = prompt_task(engine.tokenizer, n=1, temperature=0.0, max_tokens=8)
    sample = (await engine.generate_group(greedy)).samples[0]
    ids = unpack_int32(sample.response_token_ids)
    expected = hf_logprobs(tiny_model_dir, unpack_int32(greedy.prompt_token_ids), ids, state_dict=state)
    np.testing.assert_allclose(unpack_float32(sample.behaviour_logprobs), expected, atol=1e-4)


async def test_shm_notice_is_verified_loaded_and_reported(base_rollout_engine, tiny_model_dir, pushed):
    state, _, notice = pushed
    reports = []
    report = await updater(base_rollout_engine, reports).apply(notice)
    assert report.ok and report.error == "" and report.load_s > 0
    assert (report.run_id, report.replica_id, report.version) == ("test-run", "rollout-test", 1)
    assert reports == [report] and base_rollout_engine.version == 1
    await assert_serves(base_rollout_engine, tiny_model_dir, state)


async def test_bad_checksum_is_refused_and_the_old_version_kept(base_rollout_engine, pushed):
    _, _, notice = pushed
    notice.sha256 = "0" * 64
    before = await base_rollout_engine.weights_digest()
    reports = []
    report = await updater(base_rollout_engine, reports).apply(notice)
    assert not report.ok and "sha256" in report.error and report.version == 1
    assert reports == [report]
    assert base_rollout_engine.version == 0 and await base_rollout_engine.weights_digest() == before


async def test_size_mismatch_and_missing_file_are_refused(base_rollout_engine, pushed, tmp_path):
    _, path, notice = pushed
    short = pb.WeightsNotice()
    short.CopyFrom(notice)
    short.size_bytes -= 1
    missing = pb.WeightsNotice()
    missing.CopyFrom(notice)
    missing.location = str(tmp_path / "gone")
    reports = []
    applier = updater(base_rollout_engine, reports)
    assert "bytes" in (await applier.apply(short)).error
    assert "does not exist" in (await applier.apply(missing)).error
    assert [r.ok for r in reports] == [False, False] and base_rollout_engine.version == 0


async def test_objectstore_notice_fetches_verifies_and_cleans_up(base_rollout_engine, pushed, tmp_path):
    state, path, notice = pushed
    notice.transport, notice.location = "objectstore", "weights-v0000000001.safetensors"
    fetched = []

    async def fetch(name, dest):  # stands in for bus.get_file: the bytes land at dest
        fetched.append((name, dest))
        shutil.copyfile(path, dest)

    report = await updater(base_rollout_engine, [], fetch_object=fetch, cache_dir=tmp_path).apply(notice)
    assert report.ok and base_rollout_engine.version == 1
    ((name, dest),) = fetched
    # fetched into a private directory of its own under the cache dir, removed once loaded
    assert name == notice.location and dest.parent.parent == tmp_path and not dest.parent.exists()


async def test_a_version_already_held_is_a_no_op(base_rollout_engine, pushed):
    _, _, notice = pushed
    reports = []
    applier = updater(base_rollout_engine, reports)
    assert (await applier.apply(notice)).ok
    assert await applier.apply(notice) is None and len(reports) == 1


async def test_collective_notice_is_received_into_the_engine(base_rollout_engine, tiny_model_dir):
    """`collective`: the learner's weights server (here, in the test process) sends the
    tensors over a real gloo pair group into vLLM's worker; no file anywhere."""
    from meshrl.transport.weights.collective import WeightsServer, snapshot

    state = perturbed_weights(tiny_model_dir, scale=0.3, seed=5)
    server = WeightsServer("127.0.0.1", 0, timeout_s=60)
    try:
        manifest = server.offer(2, snapshot(state.items(), None))
        notice = pb.WeightsNotice(
            run_id="test-run",
            version=2,
            transport="collective",
            location=f"tcp://127.0.0.1:{server.port}",
            sha256=manifest.digest(),
            size_bytes=manifest.nbytes(),
            format="tensors",
            step=2,
        )
        reports = []
        report = await updater(base_rollout_engine, reports).apply(notice)
        assert report.ok, report.error
        assert base_rollout_engine.version == 2
        await assert_serves(base_rollout_engine, tiny_model_dir, state)

        forged = pb.WeightsNotice()
        forged.CopyFrom(notice)
        forged.version, forged.size_bytes = 3, 10
        server.offer(3, snapshot(state.items(), None))
        refused = await updater(base_rollout_engine, []).apply(forged)
        assert not refused.ok and "is not the notice's" in refused.error and base_rollout_engine.version == 2
    finally:
        server.close()
