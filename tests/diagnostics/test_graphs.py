"""steptable.diagnostics._graphs: CUDA graph replays of the monitor's step equal the eager steps (queued steps,
batch-size buckets, a capture that fails), and reset / load_state_dict keep the captured graphs valid."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from steptable.diagnostics import COLUMNS, RoutingMonitor
from steptable.diagnostics.monitor import _Graph
from tests.diagnostics.helpers import CUDA, NAN, make_batch, same, same_row, small_batch


@CUDA
def test_monitor_cuda_graph_replays_match_eager() -> None:
    """Replayed graphs give the eager values: queued steps keep their own results, more batch sizes than graphs
    kept, and a state reload (copied in place into the buffer the graphs point at: no recapture)."""
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(12)
    sizes = [256, 256, 256, 100, 256, 100, 100, 37, 512, 512, 640, 640, 700, 700, 256, 800, 800, 37, 256, 100]
    batches = [tuple(t.to(dev) for t in make_batch(g, n, d=32)) for n in sizes]
    kw: dict[str, Any] = {"capacity": 2048, "warmup": 300, "device": dev, "proj_dtype": torch.float64}
    graphed = RoutingMonitor(**kw)
    eager = RoutingMonitor(**kw, cuda_graph=False)
    pending = [graphed.step_async(*b) for b in batches]  # queued back to back, read afterwards
    for i, (b, p) in enumerate(zip(batches, pending, strict=True)):
        got, want = p.get(), eager.step(*b)
        assert all(same(got[k], want[k], 1e-12) for k in COLUMNS), (i, got, want)
    assert graphed.cuda_graph and any(v is not None for v in graphed._graphs.values())  # graphs were replayed
    captures = graphed._captures
    graphed.load_state_dict(eager.state_dict())
    for i, b in enumerate(batches[:4]):
        got, want = graphed.step(*b), eager.step(*b)
        assert all(same(got[k], want[k], 1e-12) for k in COLUMNS), (i, got, want)
    assert graphed._captures == captures  # the reload kept the graphs
    graphed.nan_policy = eager.nan_policy = "drop"  # settings baked into a graph: changing one recaptures
    for i, b in enumerate(batches[:3]):
        bad = b[0].clone()
        bad[0, 0] = NAN
        got, want = graphed.step(bad, *b[1:]), eager.step(bad, *b[1:])
        assert all(same(got[k], want[k], 1e-12) for k in COLUMNS) and not math.isnan(got["tlo"]), (i, got, want)


@CUDA
def test_monitor_cuda_graph_capture_failure_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture that fails is reported once; the step it happened in and the later ones equal the eager monitor's
    (the capture's warm-up updated the buffer, which must be put back)."""
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(13)
    batches = [tuple(t.to(dev) for t in make_batch(g, 300, d=32)) for _ in range(5)]
    kw: dict[str, Any] = {"capacity": 1024, "warmup": 200, "device": dev, "proj_dtype": torch.float64}
    failing = RoutingMonitor(**kw)
    eager = RoutingMonitor(**kw, cuda_graph=False)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("capture not supported here")

    monkeypatch.setattr(torch.cuda, "graph", broken)
    with pytest.warns(UserWarning, match="CUDA graph capture failed") as caught:
        for b in batches:
            got, want = failing.step(*b), eager.step(*b)
            assert all(same(got[k], want[k], 0.0) for k in COLUMNS), (got, want)
    assert len([w for w in caught if "CUDA graph" in str(w.message)]) == 1 and not failing.cuda_graph
    np.testing.assert_array_equal(failing.buffer().cpu().numpy(), eager.buffer().cpu().numpy())


@CUDA
def test_monitor_cuda_graph_buckets_varying_batch_sizes() -> None:
    """Rollout counts that change every step (filtered rollouts) share a few power-of-two graphs, padded with
    masked rows, and give the eager values."""
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(14)
    sizes = [int(x) for x in torch.randint(40, 3000, (60,), generator=g)]
    kw: dict[str, Any] = {"capacity": 4096, "warmup": 500, "device": dev, "proj_dtype": torch.float64}
    graphed, eager = RoutingMonitor(**kw), RoutingMonitor(**kw, cuda_graph=False)
    for i, n in enumerate(sizes):
        b = tuple(t.to(dev) for t in make_batch(g, n, d=32))
        got, want = graphed.step(*b), eager.step(*b)
        assert all(same(got[k], want[k], 1e-9) for k in COLUMNS), (i, n, got, want)
    assert 3 <= graphed._captures <= 7 and graphed.cuda_graph  # buckets 64 ... 4096


class _FakeCuda(torch.Tensor):  # type: ignore[misc]
    """Rows that take the CUDA-graph path on a CPU-only machine."""

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return True


def _stub_graphs(mon: RoutingMonitor, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Route ``mon``'s steps through the graph cache with a stand-in capture. A stand-in graph replays
    ``_compute`` on its static inputs, as a real one does, and checks what a real one cannot: that the ring
    tensors are the very ones it was captured with (a real graph would read and write freed memory)."""
    counts = {"captures": 0, "replays": 0}
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    local_rows = mon._local_rows
    monkeypatch.setattr(mon, "_local_rows", lambda *a: local_rows(*a).as_subclass(_FakeCuda))

    def capture(rows: Any, sq: Any) -> _Graph:
        counts["captures"] += 1
        ring = mon._st()
        static_rows, static_sq = rows.clone(), sq.clone()
        out = torch.zeros(len(COLUMNS) - 1, dtype=torch.float64)

        class Replay:
            def replay(self) -> None:
                assert all(now is then for now, then in zip(mon._st(), ring, strict=True)), "ring replaced"
                counts["replays"] += 1
                out.copy_(mon._compute(static_rows, static_sq))

        return _Graph(Replay(), static_rows, static_sq, out)

    monkeypatch.setattr(mon, "_capture", capture)
    return counts


def test_reset_and_load_keep_captured_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop that resets the monitor at every v_act refresh (and reloads a checkpoint now and then) captures its
    batch size once and replays it from then on; the replayed values equal an eager monitor's."""
    graphed = RoutingMonitor(capacity=256, warmup=16)
    eager = RoutingMonitor(capacity=256, warmup=16, cuda_graph=False)
    counts = _stub_graphs(graphed, monkeypatch)
    g = torch.Generator().manual_seed(6)
    cycles, steps = 20, 6  # more resets than the 16 captures a monitor may make
    for cycle in range(cycles):
        if cycle % 5 == 4:
            state = eager.state_dict()
            graphed.load_state_dict(state)
            eager.load_state_dict(state)
        else:
            graphed.reset()
            eager.reset()
        for _ in range(steps):
            batch = small_batch(g, 50)  # padded to the 64-row bucket
            got, want = graphed.step(*batch), eager.step(*batch)
            assert same_row(got, want), (cycle, got, want)
    assert counts == {"captures": 1, "replays": cycles * steps - 1}  # the first step of the bucket runs eagerly
    assert graphed._captures == 1 and graphed.cuda_graph
