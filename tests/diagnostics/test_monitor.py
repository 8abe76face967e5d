"""steptable.diagnostics.monitor: RoutingMonitor's columns against sklearn / scikit-image references, staleness
and refresh, the qmass and scores paths and dtypes, the nan policy, empty batches, the state dict, inference mode,
the GPU against the CPU, and gradients in the wrong container."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from steptable.diagnostics import COLUMNS, RoutingMonitor
from tests.diagnostics.helpers import CUDA, DEVICES, NAN, make_batch, same, sk_auroc, sk_otsu

skimage_filters = pytest.importorskip("skimage.filters")

threshold_multiotsu = skimage_filters.threshold_multiotsu


def test_columns_match_routing_schema() -> None:
    from steptable.schemas.routing import DIAGNOSTIC_KEYS

    assert COLUMNS == tuple(DIAGNOSTIC_KEYS) and RoutingMonitor.COLUMNS == COLUMNS


@pytest.mark.parametrize("device", DEVICES)
def test_monitor_against_references(device: str) -> None:
    g = torch.Generator().manual_seed(0)
    mon = RoutingMonitor(capacity=1000, warmup=400, device=torch.device(device), proj_dtype=torch.float64)
    seen: list[np.ndarray] = []
    for _ in range(6):
        act, v, hack, adv = make_batch(g, 150)
        row = mon.step(*(t.to(device) for t in (act, v, hack, adv)))
        assert list(row) == list(COLUMNS) and all(type(x) is float for x in row.values())
        s = act.double().numpy() @ v.double().numpy()
        seen.append(s)
        sel = adv.numpy() > 0
        assert same(row["auroc"], sk_auroc(hack.numpy()[sel], s[sel]), 1e-12)
        a = act.double().numpy()
        cos = s / (np.linalg.norm(a, axis=1) * np.linalg.norm(v.double().numpy()))
        assert same(row["cos"], float(cos.mean()), 1e-12)
        assert math.isnan(row["qmass"])  # no gradients given
        buf = np.concatenate(seen)[-1000:]
        np.testing.assert_allclose(mon.buffer().cpu().numpy(), buf, rtol=1e-12, atol=1e-12)
        if buf.size < 400:  # warmup: no split, everything resid
            assert math.isnan(row["tlo"]) and math.isnan(row["thi"])
            assert (row["keep"], row["resid"], row["rout"]) == (0.0, 1.0, 0.0)
            continue
        z_buf = mon.buffer(zscored=True).cpu().numpy()
        np.testing.assert_allclose(z_buf, (buf - buf.mean()) / buf.std(), rtol=0, atol=1e-12)
        assert (row["tlo"], row["thi"]) == sk_otsu(z_buf)
        z = (s - buf.mean()) / buf.std()
        cls = np.digitize(z, [row["tlo"], row["thi"]])
        want = [float(np.mean(cls == k)) for k in range(3)]
        assert all(same(a_, b_, 1e-12) for a_, b_ in zip([row["keep"], row["resid"], row["rout"]], want, strict=True))
    assert mon.steps == 6


def test_monitor_stale_and_refresh() -> None:
    mon = RoutingMonitor(capacity=32, warmup=0)
    s, y = torch.randn(8, dtype=torch.float64), torch.arange(8) % 2
    got = [mon.step(scores=s, hack=y)["stale"] for _ in range(3)]
    got.append(mon.step(scores=s, hack=y, refreshed=True)["stale"])
    got.append(mon.step(scores=s, hack=y)["stale"])
    mon.mark_refreshed()
    assert mon.stale == 0
    got.append(mon.step(scores=s, hack=y)["stale"])
    assert got == [0.0, 1.0, 2.0, 0.0, 1.0, 0.0]


def test_monitor_qmass_scores_path_and_dtypes() -> None:
    g = torch.Generator().manual_seed(2)
    act, v, hack, adv = make_batch(g, 300, dtype=torch.bfloat16)
    mon = RoutingMonitor(capacity=4096, warmup=100)
    row = mon.step(act, v, hack, adv, g_keep=[torch.ones(4)], g_quar=[torch.ones(4, dtype=torch.float16) * 3])
    assert same(row["qmass"], 0.75, 1e-12)
    s = act.double() @ v.double()  # bf16 inputs are upcast before the product
    sel = (adv > 0).numpy()
    assert same(row["auroc"], sk_auroc(hack.numpy()[sel], s.numpy()[sel]), 1e-12)
    mon2 = RoutingMonitor(capacity=4096, warmup=100)
    row2 = mon2.step(scores=s.half(), hack=hack.long(), adv=adv.half())
    assert math.isnan(row2["cos"])  # no activations given
    assert same(row2["auroc"], sk_auroc(hack.numpy()[sel], s.half().double().numpy()[sel]), 1e-12)
    with pytest.raises(TypeError):
        mon.step(act, None, hack, adv)
    with pytest.raises(ValueError):
        mon.step(act[:10], v, hack, adv)


def test_monitor_nan_policy() -> None:
    g = torch.Generator().manual_seed(3)
    act, v, hack, adv = make_batch(g, 400)
    adv[0] = 1.0
    bad = act.clone()
    bad[0, 0] = NAN
    prop = RoutingMonitor(capacity=2048, warmup=100)
    row = prop.step(bad, v, hack, adv)
    for k in ("auroc", "cos", "keep", "resid", "rout", "tlo", "thi"):
        assert math.isnan(row[k]), k
    assert prop.buffer().numel() == 399  # the nan score never enters the buffer
    drop = RoutingMonitor(capacity=2048, warmup=100, nan_policy="drop")
    clean = RoutingMonitor(capacity=2048, warmup=100)
    got = drop.step(bad, v, hack, adv)
    want = clean.step(act[1:], v, hack[1:], adv[1:])
    assert all(same(got[k], want[k], 1e-12) for k in COLUMNS), (got, want)
    adv_bad = adv.clone()
    adv_bad[5] = NAN  # a nan advantage: is the row selected? unknown, so auroc is nan
    assert math.isnan(RoutingMonitor(capacity=2048).step(act, v, hack, adv_bad)["auroc"])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_monitor_empty_batch(dtype: Any) -> None:
    """A step with no rollouts (every one filtered out upstream) reports nan and leaves the buffer alone."""
    g = torch.Generator().manual_seed(11)
    mon = RoutingMonitor(capacity=64, warmup=0)
    mon.step(*make_batch(g, 20))
    row = mon.step(torch.zeros(0, 16, dtype=dtype), torch.ones(16, dtype=dtype), torch.zeros(0, dtype=torch.bool))
    assert all(math.isnan(row[k]) for k in ("auroc", "cos", "keep", "resid", "rout")), row
    assert mon.buffer().numel() == 20 and not math.isnan(row["tlo"])


def test_monitor_state_dict_roundtrip() -> None:
    g = torch.Generator().manual_seed(4)
    a = RoutingMonitor(capacity=256, warmup=50)
    for _ in range(3):
        a.step(*make_batch(g, 60))
    b = RoutingMonitor(capacity=256, warmup=50)
    b.load_state_dict(a.state_dict())
    batch = make_batch(g, 60)
    assert a.step(*batch) == pytest.approx(b.step(*batch), nan_ok=True)
    with pytest.raises(ValueError):
        RoutingMonitor(capacity=10, warmup=11)


@CUDA
@pytest.mark.parametrize("nan_policy", ["propagate", "drop"])
def test_monitor_cuda_matches_cpu_on_hostile_steps(nan_policy: str) -> None:
    """Step by step, the GPU monitor gives the CPU monitor's columns: through warmup, a buffer that wraps, an empty
    batch, one rollout, a batch with one class, non-finite activations, advantages and labels, and the scores path."""
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(9)
    kw: dict[str, Any] = {"capacity": 3000, "warmup": 700, "nan_policy": nan_policy}
    gpu = RoutingMonitor(device=dev, proj_dtype=torch.float64, **kw)
    cpu = RoutingMonitor(**kw)
    steps: list[dict[str, Any]] = []
    for n in (500, 300, 1, 0, 900, 2500):
        act, v, hack, adv = make_batch(g, n, d=64, dtype=torch.bfloat16)
        steps.append({"act": act, "v_act": v, "hack": hack, "adv": adv})
    act, v, hack, adv = make_batch(g, 800, d=64)
    act[3, 5], act[10, 0], adv[7], adv[8] = NAN, math.inf, NAN, -math.inf
    labels = hack.double()
    labels[20] = NAN
    steps.append({"act": act, "v_act": v, "hack": labels, "adv": adv, "refreshed": True})
    steps.append({"act": act, "v_act": v, "hack": torch.zeros(800, dtype=torch.bool), "adv": adv})  # one class
    scores = torch.randn(1200, generator=g, dtype=torch.float64)
    scores[::97] = NAN
    steps.append({"scores": scores, "hack": torch.rand(1200, generator=g) < 0.3})
    grads = [torch.randn(777, generator=g), None]
    for i, step in enumerate(steps):
        want = cpu.step(**step, g_keep=grads, g_quar=grads[:1])
        on_gpu = {k: (t.to(dev) if isinstance(t, torch.Tensor) else t) for k, t in step.items()}
        got = gpu.step(**on_gpu, g_keep=[grads[0].to(dev)], g_quar=[grads[0].to(dev)])
        for k in COLUMNS:
            assert same(got[k], want[k], 1e-9), (i, k, got[k], want[k])
    np.testing.assert_allclose(gpu.buffer().cpu().numpy(), cpu.buffer().numpy(), rtol=1e-12, atol=1e-12)


def _batch(seed: int, n: int = 32, d: int = 8) -> tuple[object, object, object, object]:
    g = torch.Generator().manual_seed(seed)
    hack = torch.rand(n, generator=g) < 0.3
    v = torch.randn(d, generator=g)
    return torch.randn(n, d, generator=g) + hack[:, None] * v, v, hack, torch.randn(n, generator=g)


@pytest.mark.parametrize("placed_in_inference", [False, True])
def test_a_first_step_under_inference_mode_does_not_break_the_later_ones(placed_in_inference: bool) -> None:
    """An evaluation helper under @torch.inference_mode() takes the first step (or builds the monitor with
    device=): the buffer is made of normal tensors, so the later steps outside that mode still run (inference
    tensors would make every one of them raise into the loop)."""
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
    # one flat tensor is one gradient (element by element would give the same number, at a kernel per element)
    flat = mon.step(act, v, hack, adv, g_keep=torch.tensor([3.0, 4.0]), g_quar=torch.tensor([0.0, 5.0]))
    assert flat["qmass"] == pytest.approx(0.5)
    scalar = mon.step(act, v, hack, adv, g_keep=torch.tensor(1.0), g_quar=torch.tensor(3.0))  # a 0-d one too
    assert scalar["qmass"] == pytest.approx(0.75)


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"capacity": 1e4}, TypeError, "capacity must be an int, got float 10000.0"),
    ({"capacity": 0}, ValueError, "capacity must be >= 1, got 0"),
    ({"warmup": 10.5}, TypeError, "warmup must be an int"),
    ({"pad_to": 64.0}, TypeError, "pad_to must be an int"),
    ({"pad_to": -1}, ValueError, "pad_to must be >= 0"),
])
def test_sizes_that_are_not_ints_are_refused_when_the_monitor_is_made(kwargs: dict[str, Any], error: type,
                                                                      words: str) -> None:
    """RoutingMonitor(capacity=1e4) was accepted, then its first step raised torch's 'zeros(): argument size must
    be tuple of ints, not float' inside the training loop."""
    with pytest.raises(error, match=words):
        RoutingMonitor(**kwargs)
    assert RoutingMonitor(capacity=np.int64(64), warmup=8).capacity == 64
