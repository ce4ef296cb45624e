"""vLLM's worker stops spinning soon after its last read (services/rollout/idle_spin.py):
a real `SpinCondition` reader on a real zmq socket, before and after the cap."""

import time

import pytest
import zmq

from meshrl.services.rollout import idle_spin

shm_broadcast = pytest.importorskip("vllm.distributed.device_communicators.shm_broadcast")
SpinCondition = shm_broadcast.SpinCondition


@pytest.fixture
def reader(tmp_path, monkeypatch):
    monkeypatch.setattr(SpinCondition, "wait", SpinCondition.wait)  # undo the cap afterwards
    context = zmq.Context()
    address = f"ipc://{tmp_path}/notify"
    writer = SpinCondition(is_reader=False, context=context, notify_address=address)
    spin = SpinCondition(is_reader=True, context=context, notify_address=address)
    yield spin
    for sock in (
        spin.local_notify_socket,
        spin.read_cancel_socket,
        spin.write_cancel_socket,
        writer.local_notify_socket,
    ):
        sock.close(linger=0)
    context.term()


def seconds_to_wait(spin, last_read_ago_s: float, timeout_ms: int = 200) -> float:
    spin.last_read = time.monotonic() - last_read_ago_s
    began = time.monotonic()
    spin.wait(timeout_ms=timeout_ms)
    return time.monotonic() - began


def test_vllm_spins_for_a_second_after_a_read_without_the_cap(reader):
    assert reader.busy_loop_s == 1
    assert seconds_to_wait(reader, last_read_ago_s=0.5) < 0.15  # sched_yield: back at once


def test_capped_reader_sleeps_on_its_socket_half_a_second_after_a_read(reader):
    assert idle_spin.shorten_idle_spin(0.02)
    assert seconds_to_wait(reader, last_read_ago_s=0.5, timeout_ms=200) >= 0.19  # polled
    assert reader.busy_loop_s == 0.02
    assert seconds_to_wait(reader, last_read_ago_s=0.0) < 0.15  # just read: still spins


def test_capping_twice_wraps_once(reader):
    idle_spin.shorten_idle_spin(0.02)
    capped = SpinCondition.wait
    idle_spin.shorten_idle_spin(0.5)
    assert SpinCondition.wait is capped


def test_idle_spin_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(idle_spin.IDLE_SPIN_ENV, raising=False)
    assert idle_spin.idle_spin_s() == 0.02
    monkeypatch.setenv(idle_spin.IDLE_SPIN_ENV, "0.1")
    assert idle_spin.idle_spin_s() == 0.1
    for bad in ("soon", "-1"):
        monkeypatch.setenv(idle_spin.IDLE_SPIN_ENV, bad)
        with pytest.raises(ValueError, match=idle_spin.IDLE_SPIN_ENV):
            idle_spin.idle_spin_s()
