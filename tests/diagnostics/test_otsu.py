"""steptable.diagnostics.otsu: three-class Otsu thresholds on the device equal scikit-image's (the histogram
numpy's, bit for bit), edge cases, and the bin count's type."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from steptable.diagnostics import RoutingMonitor, multiotsu
from steptable.diagnostics.otsu import histogram
from tests.diagnostics.helpers import DEVICES, sk_otsu

sk_histogram = pytest.importorskip("skimage.exposure").histogram


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


@pytest.mark.parametrize("nbins", [8.0, True, "8"])
def test_multiotsu_non_int_nbins_is_a_type_error(nbins: Any) -> None:
    with pytest.raises(TypeError, match="nbins must be an int"):
        multiotsu(torch.randn(50), nbins=nbins)
    with pytest.raises(TypeError, match="nbins must be an int"):  # the monitor's check is the same one
        RoutingMonitor(nbins=nbins)


def test_multiotsu_numpy_int_nbins_is_an_int() -> None:
    x = torch.randn(200, generator=torch.Generator().manual_seed(3))
    from_numpy = multiotsu(x, nbins=np.int64(16))  # type: ignore[arg-type]
    assert [float(t) for t in from_numpy] == [float(t) for t in multiotsu(x, nbins=16)]
