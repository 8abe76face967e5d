"""steptable.diagnostics._ring: the ring of recent scores: it wraps keeping the last capacity scores oldest first,
drops masked-out ones, gives their moments, and saves and loads its state (before placement too)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from steptable.diagnostics import RoutingMonitor
from steptable.diagnostics._ring import ScoreRing


def test_monitor_ring_buffer_wraps() -> None:
    g = torch.Generator().manual_seed(1)
    mon = RoutingMonitor(capacity=64, warmup=10)
    chunks = []
    for n in (30, 50, 7, 200, 0, 13):
        s = torch.randn(n, generator=g, dtype=torch.float64)
        chunks.append(s)
        mon.step(scores=s, hack=torch.zeros(n, dtype=torch.bool))
        np.testing.assert_array_equal(mon.buffer().numpy(), torch.cat(chunks)[-64:].numpy())


def _ring(capacity: int) -> ScoreRing:
    ring = ScoreRing(capacity)
    ring.place(torch.device("cpu"))
    return ring


def test_masked_out_scores_are_not_kept_and_the_order_is_oldest_first() -> None:
    ring = _ring(4)
    ring.push(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), torch.tensor([True, False, True]))
    ring.push(torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64), torch.tensor([True, True, True]))
    assert ring.values().tolist() == [3.0, 4.0, 5.0, 6.0]  # 1.0 went out first; 2.0 was never kept
    mean, std = ring.moments()
    assert mean.item() == 4.5 and std.item() == pytest.approx(math.sqrt(1.25))
    assert ring.values(zscored=True).tolist() == pytest.approx([(x - 4.5) / math.sqrt(1.25) for x in (3, 4, 5, 6)])


def test_an_empty_ring_has_nan_moments_and_no_state() -> None:
    assert ScoreRing(4).state() == {} and ScoreRing(4).values().numel() == 0
    mean, std = _ring(4).moments()
    assert math.isnan(mean.item()) and math.isnan(std.item())


def test_a_state_loaded_before_placement_waits_on_the_host_and_survives_a_round_trip() -> None:
    ring = ScoreRing(3)
    ring.load(torch.tensor([7.0, 8.0, 9.0]), head=1, count=2)
    assert ring.device is None and ring.values().tolist() == [9.0, 7.0]
    ring.place(torch.device("cpu"))
    state = ring.state()
    assert state["head"] == 1 and state["count"] == 2 and state["buffer"].tolist() == [7.0, 8.0, 9.0]
    ring.clear()
    assert ring.values().numel() == 0 and ring.state()["buffer"].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(("shape", "head", "count"), [((4,), 0, 0), ((3,), 3, 0), ((3,), 0, 4), ((3,), -1, 0)])
def test_a_state_that_does_not_fit_the_ring_is_refused(shape: tuple[int], head: int, count: int) -> None:
    with pytest.raises(ValueError):
        ScoreRing(3).load(torch.zeros(shape), head=head, count=count)
