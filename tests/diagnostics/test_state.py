"""RoutingMonitor state: a loaded checkpoint waits for the first step's device, state dicts are snapshots, and
reset / load_state_dict change the ring in place so that captured CUDA graphs stay valid (CPU, stubbed capture)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from steptable.diagnostics import COLUMNS, RoutingMonitor  # noqa: E402
from steptable.diagnostics.monitor import _Graph  # noqa: E402
from tests.diagnostics.helpers import same_row, small_batch  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _trained(seed: int = 1) -> RoutingMonitor:
    g = torch.Generator().manual_seed(seed)
    mon = RoutingMonitor(capacity=64, warmup=16)
    for _ in range(3):
        mon.step(*small_batch(g, 30))
    return mon


# ---------------------------------------------------------------------------------------------------- loading


def test_loaded_state_waits_for_the_first_steps_device() -> None:
    """A checkpoint loaded into a monitor built without a device stays on the host; the first step moves it to
    its inputs' device (meta here, standing in for a GPU: a monitor pinned to the CPU would copy each step's
    activations to the host)."""
    src = _trained()
    mon = RoutingMonitor(capacity=64, warmup=16)
    mon.load_state_dict(src.state_dict())
    assert mon.device is None
    assert torch.equal(mon.buffer(), src.buffer()) and torch.equal(mon.buffer(zscored=True), src.buffer(zscored=True))
    assert torch.equal(mon.state_dict()["buffer"], src.state_dict()["buffer"])
    g = torch.Generator().manual_seed(2)
    pending = mon.step_async(*small_batch(g, 20, device="meta"), g_keep=[torch.ones(3, device="meta")], g_quar=[])
    assert mon.device == torch.device("meta") and pending.values.device.type == "meta"
    assert all(t.device.type == "meta" for t in mon._st())


def test_loaded_state_continues_exactly() -> None:
    """Loaded before the first step or into a monitor that has run: the next steps equal the source's."""
    src = _trained()
    fresh = RoutingMonitor(capacity=64, warmup=16)
    fresh.load_state_dict(src.state_dict())
    used = _trained(seed=7)
    used.load_state_dict(src.state_dict())
    g = torch.Generator().manual_seed(3)
    for _ in range(3):
        batch = small_batch(g, 25)
        want = src.step(*batch)
        assert same_row(fresh.step(*batch), want) and same_row(used.step(*batch), want)
    assert fresh.device == torch.device("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_loaded_state_moves_to_the_gpu_on_the_first_step() -> None:
    src = _trained()
    mon = RoutingMonitor(capacity=64, warmup=16, proj_dtype=torch.float64)
    mon.load_state_dict(src.state_dict())
    g = torch.Generator().manual_seed(8)
    for _ in range(3):
        batch = small_batch(g, 30)
        want = src.step(*batch)
        assert same_row(mon.step(*(t.cuda() for t in batch)), want, 1e-9)  # reduction order differs
    assert mon.device == torch.device("cuda", torch.cuda.current_device())
    assert torch.allclose(mon.buffer().cpu(), src.buffer(), rtol=1e-12, atol=1e-12)


def test_state_dict_is_a_snapshot() -> None:
    """On the CPU too, a state dict is a copy: it does not change as the monitor keeps stepping, and the monitor
    does not write into a state dict it loaded."""
    mon = _trained()
    saved = mon.state_dict()
    kept = saved["buffer"].clone()
    loaded = RoutingMonitor(capacity=64, warmup=16)
    loaded.load_state_dict(saved)
    g = torch.Generator().manual_seed(4)
    for _ in range(3):
        batch = small_batch(g, 30)
        mon.step(*batch)
        loaded.step(*batch)
    assert torch.equal(saved["buffer"], kept)
    assert not torch.equal(mon.state_dict()["buffer"], kept)


def test_load_state_dict_rejects_a_bad_state() -> None:
    state = _trained().state_dict()
    mon = RoutingMonitor(capacity=64, warmup=16)
    with pytest.raises(ValueError, match="head"):
        mon.load_state_dict({**state, "head": 64})
    with pytest.raises(ValueError, match="shape"):
        mon.load_state_dict({**state, "buffer": state["buffer"][:10]})
    with pytest.raises(ValueError, match="capacity"):
        RoutingMonitor(capacity=32).load_state_dict(state)


def test_reset_after_load_forgets_the_host_state() -> None:
    mon = RoutingMonitor(capacity=64, warmup=16)
    mon.load_state_dict(_trained().state_dict())
    mon.reset()
    assert mon.buffer().numel() == 0 and mon.steps == 0
    mon.step(*small_batch(torch.Generator().manual_seed(5), 10))
    assert mon.buffer().numel() == 10


# ---------------------------------------------------------------------------------------------------- CUDA graphs


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
