"""RoutingMonitor state: a loaded checkpoint waits for the first step's device and continues exactly, state dicts
are snapshots, a bad state is refused, and reset forgets a loaded host state."""

from __future__ import annotations

import pytest
import torch

from steptable.diagnostics import RoutingMonitor
from tests.diagnostics.helpers import make_batch, same_row, small_batch


def _trained(seed: int = 1) -> RoutingMonitor:
    g = torch.Generator().manual_seed(seed)
    mon = RoutingMonitor(capacity=64, warmup=16)
    for _ in range(3):
        mon.step(*small_batch(g, 30))
    return mon


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


def test_loading_a_state_saved_before_any_step_empties_the_buffer() -> None:
    """A checkpoint taken before the first step, loaded into a monitor that has run: nothing stays buffered, so
    the next step is in warmup exactly as it is for a fresh monitor loading the same state."""
    g = torch.Generator().manual_seed(5)
    used = RoutingMonitor(capacity=32, warmup=8)
    for _ in range(3):
        used.step(*make_batch(g, 10))
    saved = RoutingMonitor(capacity=32, warmup=8).state_dict()
    used.load_state_dict(saved)
    fresh = RoutingMonitor(capacity=32, warmup=8)
    fresh.load_state_dict(saved)
    assert used.buffer().numel() == 0
    batch = make_batch(g, 4)
    assert used.step(*batch) == pytest.approx(fresh.step(*batch), nan_ok=True)
