"""steptable.diagnostics against sklearn / scikit-image, plus the no-host-sync contract of RoutingMonitor."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skimage_filters = pytest.importorskip("skimage.filters")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from skimage.exposure import histogram as sk_histogram  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from steptable.diagnostics import (  # noqa: E402
    COLUMNS,
    RoutingMonitor,
    auroc,
    cosine_mean,
    measures,
    multiotsu,
    quarantine_mass,
    shares,
)
from steptable.diagnostics.otsu import histogram  # noqa: E402
from tests.diagnostics.helpers import make_batch, same, sk_auroc, sk_otsu  # noqa: E402

roc_auc_score = sklearn_metrics.roc_auc_score
threshold_multiotsu = skimage_filters.threshold_multiotsu
NAN = float("nan")


pytestmark = pytest.mark.usefixtures("one_torch_thread")
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
#: The reference comparisons run where the tensors are: the CPU always, the GPU where there is one (sorts, cumsums
#: and the histogram's binning are other kernels there).
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


# ---------------------------------------------------------------------------------------------------- AUROC


def _random_scores(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    if kind == 0:
        return rng.normal(size=n)
    if kind == 1:  # heavy ties: integer-valued scores
        return rng.integers(0, int(rng.choice([2, 3, 10])), n).astype(np.float64)
    if kind == 2:  # N(20, 5): where torchmetrics' sigmoid saturates into ties
        return rng.normal(20.0, 5.0, n)
    if kind == 3:  # float32-rounded values, some exact duplicates
        return np.round(rng.normal(size=n), 2).astype(np.float32).astype(np.float64)
    return rng.exponential(size=n) * 1e3


@pytest.mark.parametrize("device", DEVICES)
def test_auroc_matches_sklearn_random(device: str) -> None:
    rng = np.random.default_rng(1234)
    sizes = [int(x) for x in rng.integers(2, 300, 320)] + [int(x) for x in rng.integers(300, 5000, 20)]
    sizes += [100_000, 100_000]
    checked = nan_cases = 0
    for case, n in enumerate(sizes):
        s = _random_scores(rng, n, case % 5)
        y = rng.random(n) < rng.choice([0.5, 0.2, 0.03])
        s = s + y * rng.choice([0.0, 0.3, 2.0])  # some signal
        mask = rng.random(n) < rng.choice([1.0, 0.5, 0.1])
        got = auroc(*(torch.from_numpy(a).to(device) for a in (s, y, mask))).item()
        want = sk_auroc(y[mask], s[mask])
        assert same(got, want, 1e-12), (case, n, got, want)
        checked += 1
        nan_cases += math.isnan(want)
    assert checked == len(sizes) and 0 < nan_cases < checked // 4


def test_auroc_edge_cases() -> None:
    s = torch.arange(10, dtype=torch.float64)
    y = s >= 5
    assert auroc(s, y).item() == 1.0  # perfect
    assert auroc(-s, y).item() == 0.0  # reversed
    assert auroc(torch.zeros(10), y).item() == 0.5  # constant: all ties
    assert math.isnan(auroc(s, torch.zeros(10, dtype=torch.bool)).item())  # one class
    assert math.isnan(auroc(s, torch.ones(10, dtype=torch.bool)).item())
    assert math.isnan(auroc(s, y, torch.zeros(10, dtype=torch.bool)).item())  # empty selection
    assert math.isnan(auroc(s[:0], y[:0]).item())  # empty input
    # label encodings: bool, int 0/1, float 0/1 agree
    r = torch.randn(50, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    lab = r + torch.randn(50, generator=torch.Generator().manual_seed(1), dtype=torch.float64) > 0
    ref = auroc(r, lab).item()
    assert auroc(r, lab.long()).item() == ref and auroc(r, lab.double()).item() == ref
    assert same(ref, sk_auroc(lab.numpy(), r.numpy()), 1e-12)


def test_auroc_no_sigmoid_saturation() -> None:
    """N(20, 5) scores: torchmetrics' binary_auroc squashes them with a sigmoid (0.5565 in the spec's example)."""
    rng = np.random.default_rng(7)
    y = rng.random(4000) < 0.4
    s = rng.normal(20, 5, 4000) + 1.5 * y
    got = auroc(torch.from_numpy(s), torch.from_numpy(y)).item()
    assert same(got, float(roc_auc_score(y, s)), 1e-12)
    squashed = torch.sigmoid(torch.from_numpy(s).float())  # what a sigmoid does to these scores: mostly 1.0
    assert auroc(squashed, torch.from_numpy(y)).item() < got - 0.01


def test_auroc_nan_policy() -> None:
    rng = np.random.default_rng(3)
    s = rng.normal(size=200)
    y = rng.random(200) < 0.5
    s_bad = s.copy()
    s_bad[[3, 50]] = [np.nan, np.inf]
    sel = np.ones(200, dtype=bool)
    t, ty = torch.from_numpy(s_bad), torch.from_numpy(y)
    assert math.isnan(auroc(t, ty).item())  # propagate (default)
    keep = np.isfinite(s_bad)
    assert same(auroc(t, ty, nan_policy="drop").item(), sk_auroc(y[keep], s[keep]), 1e-12)
    # a non-finite score outside the mask does not matter
    sel[[3, 50]] = False
    assert same(auroc(t, ty, torch.from_numpy(sel)).item(), sk_auroc(y[sel], s[sel]), 1e-12)
    # nan labels are non-finite rows too
    yl = torch.from_numpy(y.astype(np.float64))
    yl[7] = NAN
    assert math.isnan(auroc(torch.from_numpy(s), yl).item())
    with pytest.raises(ValueError):
        auroc(t, ty, nan_policy="ignore")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_auroc_low_precision_inputs(dtype: torch.dtype, device: str) -> None:
    rng = np.random.default_rng(11)
    y = rng.random(3000) < 0.3
    s = torch.from_numpy(rng.normal(size=3000) + 0.5 * y).to(device, dtype)  # bf16 rounding creates many ties
    got = auroc(s, torch.from_numpy(y).to(device))
    assert got.dtype == torch.float64 and got.device == s.device
    assert same(got.item(), float(roc_auc_score(y, s.double().cpu().numpy())), 1e-12)


# ---------------------------------------------------------------------------------------------------- Otsu


def _random_values(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    if kind == 0:
        return rng.normal(size=n)
    if kind == 1:  # two or three modes
        parts = [rng.normal(m, w, n) for m, w in [(0, 1), (4, 0.5), (-3, 0.3)][: int(rng.integers(2, 4))]]
        return np.concatenate(parts)[rng.permutation(len(parts) * n)[:n]]
    if kind == 2:  # ties: few distinct integers (2, 3, ... values)
        return rng.integers(0, int(rng.integers(2, 12)), n).astype(np.float64)
    if kind == 3:
        return rng.standard_t(2, n)
    if kind == 4:  # values sitting exactly on bin edges: 0..255
        return rng.integers(0, 256, n).astype(np.float64)
    return (rng.exponential(size=n) - 1.0) / 0.7  # z-score-like, skewed


def _sigma(counts: np.ndarray, i: int, j: int) -> float:
    """skimage's objective (with its two quirks) for the split (i, j), in float64 from integer counts."""
    w = np.cumsum(counts.astype(np.float64))
    m = np.cumsum(np.maximum(np.arange(counts.size), 1) * counts.astype(np.float64))

    def v(a: int, b: int) -> float:
        ww = w[b] - (w[a - 1] if a else 0.0)
        mm = m[b] - (m[a - 1] if a else 0.0)
        return mm * mm / ww if ww > 0 else 0.0

    return (v(0, i) if i else 0.0) + v(j + 1, counts.size - 1) + v(i + 1, j)


@pytest.mark.parametrize("device", DEVICES)
def test_multiotsu_matches_skimage_random(device: str) -> None:
    """Thresholds equal skimage's; the rare differences are float32 near-ties of skimage's own arithmetic.

    skimage accumulates its moments in float32; our grid is float64 from exact integer counts. Splits made of the
    same bins tie bit-exactly in both (first pair wins in both). Two *different* splits whose objective differs
    by less than float32 rounding (or ties exactly, e.g. a symmetric histogram of integer values) may be ordered
    differently: then our pair must be the (near-)exact maximum and skimage's within 1e-6 relative of it.
    """
    rng = np.random.default_rng(2024)
    sizes = [int(x) for x in rng.integers(3, 400, 260)] + [int(x) for x in rng.integers(400, 5000, 30)]
    sizes += [65_536, 65_536]
    mismatches = raised = 0
    for case, n in enumerate(sizes):
        x = _random_values(rng, n, case % 6)
        tx = torch.from_numpy(x).to(device)
        counts, centers, broken = histogram(tx, torch.ones(n, dtype=torch.bool, device=device), 256)
        ref_counts, ref_centers = sk_histogram(x, 256, source_range="image")
        assert not broken.item()
        np.testing.assert_array_equal(counts.cpu().numpy(), ref_counts)  # numpy's binning, bit for bit
        np.testing.assert_array_equal(centers.cpu().numpy(), ref_centers)
        lo, hi = (t.item() for t in multiotsu(tx))
        want = sk_otsu(x)
        if math.isnan(want[0]):
            raised += 1
            assert math.isnan(lo) and math.isnan(hi), case
            continue
        if (lo, hi) != want:
            mismatches += 1
            ours = (int(np.flatnonzero(ref_centers == lo)[0]), int(np.flatnonzero(ref_centers == hi)[0]))
            theirs = (int(np.flatnonzero(ref_centers == want[0])[0]), int(np.flatnonzero(ref_centers == want[1])[0]))
            s_ours, s_theirs = _sigma(ref_counts, *ours), _sigma(ref_counts, *theirs)
            assert s_ours >= s_theirs * (1 - 1e-12), (case, ours, theirs)
            assert (s_ours - s_theirs) / s_ours < 1e-6, (case, ours, theirs, s_ours, s_theirs)
    assert raised > 5  # the few-distinct-values cases were exercised
    assert mismatches <= len(sizes) // 50, mismatches


@pytest.mark.parametrize("device", DEVICES)
def test_multiotsu_edge_cases(device: str) -> None:
    def otsu(v: Any, **kw: Any) -> tuple[float, float]:
        lo, hi = multiotsu(torch.as_tensor(v, dtype=torch.float64, device=device), **kw)
        return lo.item(), hi.item()

    assert all(math.isnan(t) for t in otsu(np.full(100, 3.0)))  # constant
    assert all(math.isnan(t) for t in otsu([1.0, 2.0, 1.0, 2.0]))  # two values
    assert all(math.isnan(t) for t in otsu(np.zeros(0)))  # empty
    three = np.array([0.0, 0.0, 5.0, 7.0, 7.0, 7.0])  # exactly three values: skimage's special case
    assert otsu(three) == sk_otsu(three)
    four = np.array([0.0, 1.0, 1.0, 5.0, 9.0, 9.0, 10.0])
    assert otsu(four) == sk_otsu(four)
    x = np.random.default_rng(5).normal(size=500)
    bad = x.copy()
    bad[10] = np.nan
    assert all(math.isnan(t) for t in otsu(bad))
    assert otsu(bad, nan_policy="drop") == sk_otsu(np.delete(x, 10))
    m = np.random.default_rng(6).random(500) < 0.5
    assert otsu(x, mask=torch.from_numpy(m).to(device)) == sk_otsu(x[m])
    lo, hi = multiotsu(torch.from_numpy(x).to(device, torch.bfloat16))  # low precision in, float64 out
    assert lo.dtype == torch.float64 and (lo.item(), hi.item()) == sk_otsu(
        torch.from_numpy(x).to(torch.bfloat16).double().numpy()
    )
    with pytest.raises(ValueError):
        multiotsu(torch.from_numpy(x).to(device), nbins=2)


# ------------------------------------------------------------------------------------------ shares, cos, qmass


def test_shares() -> None:
    z = torch.tensor([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0], dtype=torch.float64)
    got = shares(z, -0.5, 1.0).tolist()  # digitize: z == tlo is resid, z == thi is rout
    assert got == [2 / 8, 3 / 8, 3 / 8]
    assert shares(z, torch.tensor(-0.5), torch.tensor(1.0)).tolist() == got
    assert shares(z, -math.inf, math.inf).tolist() == [0.0, 1.0, 0.0]  # warmup convention
    assert all(math.isnan(v) for v in shares(z, NAN, 1.0).tolist())  # never a silent "all resid"
    assert all(math.isnan(v) for v in shares(z[:0], -1.0, 1.0).tolist())
    zb = z.clone()
    zb[0] = NAN
    assert all(math.isnan(v) for v in shares(zb, -0.5, 1.0).tolist())
    assert shares(zb, -0.5, 1.0, nan_policy="drop").tolist() == [1 / 7, 3 / 7, 3 / 7]
    mask = torch.tensor([True] * 4 + [False] * 4)
    assert shares(z, -0.5, 1.0, mask).tolist() == [0.5, 0.5, 0.0]


def test_cosine_mean() -> None:
    g = torch.Generator().manual_seed(0)
    act = torch.randn(64, 32, generator=g, dtype=torch.float64)
    v = torch.randn(32, generator=g, dtype=torch.float64)
    a, vv = act.numpy(), v.numpy()
    want = float(np.mean(a @ vv / (np.linalg.norm(a, axis=1) * np.linalg.norm(vv))))
    assert same(cosine_mean(act, v).item(), want, 1e-12)
    got16 = cosine_mean(act.to(torch.bfloat16), v.to(torch.bfloat16)).item()
    assert abs(got16 - want) < 1e-2
    act[5] = 0.0  # a zero row has no direction: nan, not a clamped 0
    assert math.isnan(cosine_mean(act, v).item())
    rest = np.delete(a, 5, axis=0)
    want_rest = float(np.mean(rest @ vv / (np.linalg.norm(rest, axis=1) * np.linalg.norm(vv))))
    assert same(cosine_mean(act, v, nan_policy="drop").item(), want_rest, 1e-12)
    assert math.isnan(cosine_mean(act, torch.zeros(32, dtype=torch.float64), nan_policy="drop").item())


def test_quarantine_mass() -> None:
    keep = [torch.full((3,), 1.0), torch.full((2, 2), 1.0), None]  # |g_keep| = sqrt(7)
    quar = [torch.full((9,), 1.0, dtype=torch.bfloat16)]  # |g_quar| = 3
    assert same(quarantine_mass(keep, quar).item(), 3 / (3 + math.sqrt(7)), 1e-12)
    assert quarantine_mass(keep, []).item() == 0.0
    assert quarantine_mass([], quar).item() == 1.0
    assert math.isnan(quarantine_mass([torch.zeros(3)], [torch.zeros(3)]).item())  # 0/0
    assert math.isnan(quarantine_mass([], []).item())
    assert math.isnan(quarantine_mass([torch.tensor([math.inf])], quar).item())  # not a silent 0
    assert math.isnan(quarantine_mass(keep, [torch.tensor([NAN])]).item())
    big = [torch.full((1000,), 300.0, dtype=torch.float16)]  # squares overflow fp16: norms are upcast
    assert same(quarantine_mass(big, big).item(), 0.5, 1e-12)


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


def test_monitor_ring_buffer_wraps() -> None:
    g = torch.Generator().manual_seed(1)
    mon = RoutingMonitor(capacity=64, warmup=10)
    chunks = []
    for n in (30, 50, 7, 200, 0, 13):
        s = torch.randn(n, generator=g, dtype=torch.float64)
        chunks.append(s)
        mon.step(scores=s, hack=torch.zeros(n, dtype=torch.bool))
        np.testing.assert_array_equal(mon.buffer().numpy(), torch.cat(chunks)[-64:].numpy())


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


# ---------------------------------------------------------------------------------------------------- host syncs

# Ops that force (or imply) a device -> host synchronisation or a data-dependent output shape.
_SYNC_OPS = {
    "_local_scalar_dense",
    "item",
    "is_nonzero",
    "equal",
    "nonzero",
    "nonzero_static",
    "argwhere",
    "masked_select",
    "unique_consecutive",
    "unique_dim",
    "_unique",
    "_unique2",
    "bincount",
    "repeat_interleave",
    "masked_scatter",
}


class HostSyncRecorder(TorchDispatchMode):
    """Records every aten op and flags the host-bound ones: sync ops, boolean-mask indexing, copies to the CPU.

    On a CPU tensor a copy "to the host" is invisible unless it names the device, so the monitor's final
    transfer is an explicit ``.to(device="cpu", copy=True)``: it shows up here as ``_to_copy(device=cpu)``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.host_bound: list[tuple[int, str]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        self.ops.append(name)
        flag = name in _SYNC_OPS
        if name in ("index", "index_put", "index_put_"):
            flag = any(isinstance(t, torch.Tensor) and t.dtype == torch.bool for t in (args[1] or []))
        if name == "_to_copy" and kwargs.get("device") is not None:
            flag = flag or torch.device(kwargs["device"]).type == "cpu"
        if name == "copy_":
            flag = flag or (args[0].device.type == "cpu" and args[1].device.type != "cpu")
        if flag:
            self.host_bound.append((len(self.ops) - 1, name))
        return func(*args, **kwargs)


def test_recorder_catches_syncs() -> None:
    """The recorder is not vacuous: .item(), float(), bool(), boolean-mask indexing, nonzero, .cpu-like copies."""
    x = torch.randn(8)
    for fn in (
        lambda: x.sum().item(),
        lambda: float(x.sum()),
        lambda: bool(x.sum() > 0),
        lambda: x[x > 0],
        lambda: torch.nonzero(x),
        lambda: torch.unique(x),
        lambda: x.to(device="cpu", copy=True),
    ):
        with HostSyncRecorder() as rec:
            fn()
        assert rec.host_bound, fn


@pytest.mark.parametrize("nan_policy", ["propagate", "drop"])
def test_monitor_step_has_exactly_one_host_transfer(nan_policy: str) -> None:
    g = torch.Generator().manual_seed(5)
    mon = RoutingMonitor(capacity=1024, warmup=200, nan_policy=nan_policy)
    mon.step(*make_batch(g, 300))  # lazy allocation happens outside the recorded step
    act, v, hack, adv = make_batch(g, 300, dtype=torch.bfloat16)
    grads = {"g_keep": [torch.randn(5, generator=g), None], "g_quar": [torch.randn(3, generator=g)]}
    with HostSyncRecorder() as rec:
        pending = mon.step_async(act, v, hack, adv, refreshed=True, **grads)
    assert rec.host_bound == [], rec.host_bound  # nothing inside the step touches the host
    with HostSyncRecorder() as rec:
        row = pending.get()
    assert [name for _, name in rec.host_bound] == ["_to_copy"]
    assert rec.host_bound[0][0] == len(rec.ops) - 1  # ... and it is the very last op
    assert not math.isnan(row["tlo"])  # past warmup: the full path (Otsu, shares) ran
    with HostSyncRecorder() as rec:
        mon.step(act, v, hack, adv, **grads)
    assert [name for _, name in rec.host_bound] == ["_to_copy"] and rec.host_bound[0][0] == len(rec.ops) - 1


def test_standalone_functions_do_not_sync() -> None:
    g = torch.Generator().manual_seed(8)
    act, v, hack, adv = make_batch(g, 500, dtype=torch.bfloat16)
    s = torch.randn(500, generator=g, dtype=torch.float64)
    with HostSyncRecorder() as rec:
        auroc(s, hack, adv > 0, nan_policy="drop")
        lo, hi = multiotsu(s, mask=adv > -1)
        shares(s, lo, hi)
        cosine_mean(act, v)
        quarantine_mass([act], [v])
    assert rec.host_bound == [] and len(rec.ops) > 50


@CUDA
def test_monitor_cuda_no_sync() -> None:
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(6)
    batches = [tuple(t.to(dev) for t in make_batch(g, 4096, d=256, dtype=torch.bfloat16)) for _ in range(4)]
    grads = [torch.randn(1000, device=dev)]
    default = RoutingMonitor(capacity=8192, warmup=1000, device=dev)  # float32 projections
    exact = RoutingMonitor(capacity=8192, warmup=1000, device=dev, proj_dtype=torch.float64)
    # the second step of a batch size captures its CUDA graph (a one-off synchronisation), outside the window
    pending = [exact.step_async(*b, g_keep=grads, g_quar=grads) for b in batches[:2]]
    for b in batches[:2]:
        default.step_async(*b, g_keep=grads, g_quar=grads)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any synchronising call inside the steps raises
    try:
        for b in batches[2:]:
            default.step_async(*b, g_keep=grads, g_quar=grads)
            pending.append(exact.step_async(*b, g_keep=grads, g_quar=grads))
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert exact.cuda_graph and default.cuda_graph  # the steps in the window replayed graphs
    rows = [p.get() for p in pending]
    cpu = RoutingMonitor(capacity=8192, warmup=1000)
    for b, row in zip(batches, rows, strict=True):
        ref = cpu.step(*(t.cpu() for t in b), g_keep=[grads[0].cpu()], g_quar=[grads[0].cpu()])
        for k in COLUMNS:  # float64 on both sides; only reduction order differs
            assert same(row[k], ref[k], 1e-9), (k, row[k], ref[k])


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


@CUDA
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_project_upcasts_big_batches_in_chunks_on_cuda(dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch larger than the accelerator's chunk is upcast a chunk at a time: scores and cosines as accurate as
    one whole upcast, with at most one chunk's float32 copy allocated beside the inputs."""
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(21)
    act = torch.randn(3001, 1024, device=dev, generator=g).to(dtype)
    v = torch.randn(1024, device=dev, generator=g).to(dtype)
    whole = measures.project(act, v)
    monkeypatch.setattr(measures, "_ACCEL_CHUNK", 1 << 18)  # 256 rows of 1024 a chunk: 12 chunks
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    chunked = measures.project(act, v)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    assert extra < act.numel(), extra  # a whole float32 copy would be 4 bytes an element
    a64, v64 = act.double(), v.double()
    dot64 = a64 @ v64
    cos64 = dot64 / (torch.linalg.vector_norm(a64, dim=1) * torch.linalg.vector_norm(v64))
    bound = 1e-6 * (a64.abs() @ v64.abs())  # float32 sums (gemv orders them by the batch's shape)
    for dot, cos in (whole, chunked):
        assert dot.dtype == cos.dtype == torch.float64 and dot.shape == cos.shape == (3001,)
        assert ((dot - dot64).abs() <= bound).all() and ((cos - cos64).abs() <= 1e-6).all()


def test_import_is_lazy() -> None:
    code = "import sys, steptable.diagnostics; assert 'torch' not in sys.modules; print('ok')"
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


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
