"""Combination: weighted sum of OK components; a failed required component makes NaN."""

import math

import numpy as np

from meshrl.api.common.v1 import common_pb2
from meshrl.services.reward.combine import combine, failed_components, fill_samples
from meshrl.services.reward.types import ComponentScore, ItemScore, Status, failed, ok


def row(*scores: tuple[str, float, ItemScore]) -> list[ComponentScore]:
    return [ComponentScore(name, weight, s, latency_s=0.25) for name, weight, s in scores]


def test_weighted_sum_of_ok_components():
    rows = [
        row(("math", 1.0, ok(1.0)), ("fmt", 0.5, ok(1.0)), ("len", 0.2, ok(-0.5))),  # 1 + .5 - .1
        row(("math", 1.0, ok(0.0)), ("fmt", 0.5, ok(1.0)), ("len", 0.2, ok(0.0))),  # 0 + .5 + 0
    ]
    np.testing.assert_allclose(combine(rows), [1.4, 0.5])


def test_failed_required_component_gives_nan_not_zero():
    rows = [
        row(("math", 1.0, failed(Status.TIMEOUT, "slow")), ("fmt", 0.5, ok(1.0))),
        row(("math", 1.0, ok(1.0)), ("fmt", 0.5, failed(Status.ERROR, "boom"))),
        row(("math", 1.0, ok(1.0)), ("fmt", 0.5, ok(0.0))),
    ]
    out = combine(rows)
    assert math.isnan(out[0]) and math.isnan(out[1]) and out[2] == 1.0


def test_zero_weight_component_is_diagnostic_only():
    rows = [
        row(("math", 1.0, ok(1.0)), ("acc", 0.0, failed(Status.ERROR, "x"))),
        row(("math", 1.0, ok(0.0)), ("acc", 0.0, ok(1.0))),
    ]
    np.testing.assert_allclose(combine(rows), [1.0, 0.0])


def test_fill_samples_keeps_every_component():
    samples = [common_pb2.Sample(index=0), common_pb2.Sample(index=1)]
    rows = [
        row(("math", 2.0, ok(1.0)), ("ext", 1.0, ok(0.25))),
        row(("math", 2.0, ok(1.0)), ("ext", 1.0, failed(Status.TIMEOUT, "no answer within 1s"))),
    ]
    fill_samples(samples, rows)
    assert samples[0].reward == 2.25
    assert math.isnan(samples[1].reward)
    ext = samples[1].reward_components[1]
    assert (ext.name, ext.weight, ext.status, ext.error, ext.latency_s) == (
        "ext",
        1.0,
        common_pb2.SCORE_STATUS_TIMEOUT,
        "no answer within 1s",
        0.25,
    )
    assert math.isnan(ext.value)
    assert failed_components(samples[1]) == ["ext: SCORE_STATUS_TIMEOUT no answer within 1s"]
    assert failed_components(samples[0]) == []
    fill_samples(samples, rows)  # re-scoring (a redelivery) replaces, does not append
    assert len(samples[0].reward_components) == 2
