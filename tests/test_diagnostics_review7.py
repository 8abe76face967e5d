"""RoutingMonitor in real loops (seventh review): a first step under torch.inference_mode(), gradients given in a
container that is not a list of tensors."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from steptable.diagnostics import RoutingMonitor  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _batch(seed: int, n: int = 32, d: int = 8) -> tuple[object, object, object, object]:
    g = torch.Generator().manual_seed(seed)
    hack = torch.rand(n, generator=g) < 0.3
    v = torch.randn(d, generator=g)
    return torch.randn(n, d, generator=g) + hack[:, None] * v, v, hack, torch.randn(n, generator=g)


@pytest.mark.parametrize("placed_in_inference", [False, True])
def test_a_first_step_under_inference_mode_does_not_break_the_later_ones(placed_in_inference: bool) -> None:
    """An evaluation helper under @torch.inference_mode() took the first step (or built the monitor with device=):
    its buffer became inference tensors, and every later step outside that mode raised into the loop, for good."""
    if placed_in_inference:
        with torch.inference_mode():
            mon = RoutingMonitor(capacity=256, warmup=16, device="cpu")
    else:
        mon = RoutingMonitor(capacity=256, warmup=16)
    with torch.inference_mode():
        first = mon.step(*_batch(0))
    later = [mon.step(*_batch(s)) for s in range(1, 4)]
    assert math.isfinite(first["auroc"]) and all(math.isfinite(r["tlo"]) for r in later)
    mon.reset()
    assert mon.steps == 0
    with torch.inference_mode():  # and in the mode again, after that
        assert math.isfinite(mon.step(*_batch(5))["auroc"]) and mon.steps == 1


def test_gradients_in_the_wrong_container_say_what_is_wanted() -> None:
    mon = RoutingMonitor(capacity=64, warmup=4)
    act, v, hack, adv = _batch(1)
    wanted = r"iterable of them \(e.g. \[p.grad for p in params\]\), got an item of type str"
    with pytest.raises(TypeError, match=wanted):
        mon.step(act, v, hack, adv, g_keep={"w": torch.randn(3)}, g_quar={"q": torch.randn(3)})
    # one flat tensor is one gradient (it was taken element by element: the same number, a kernel per element)
    flat = mon.step(act, v, hack, adv, g_keep=torch.tensor([3.0, 4.0]), g_quar=torch.tensor([0.0, 5.0]))
    assert flat["qmass"] == pytest.approx(0.5)
    scalar = mon.step(act, v, hack, adv, g_keep=torch.tensor(1.0), g_quar=torch.tensor(3.0))  # a 0-d one too
    assert scalar["qmass"] == pytest.approx(0.75)
