"""steptable.diagnostics.auc: exact binary AUROC on the device equals sklearn's on random and edge cases, with no
sigmoid squashing of the scores, a nan policy, and low-precision inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from steptable.diagnostics import auroc
from tests.diagnostics.helpers import DEVICES, NAN, same, sk_auroc

sklearn_metrics = pytest.importorskip("sklearn.metrics")
roc_auc_score = sklearn_metrics.roc_auc_score


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


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_auroc_integer_scores_are_ranked_exactly(dtype: torch.dtype) -> None:
    rng = np.random.default_rng(5)
    y = rng.random(2000) < 0.4
    base = 2**60 if dtype == torch.int64 else 0  # int64 past 2**53: neighbours are one float64 apart no longer
    top = {torch.int64: 40, torch.int32: 2**31 - 1, torch.uint8: 255}[dtype]
    s = rng.integers(0, top, 2000) + base
    got = auroc(torch.from_numpy(s).to(dtype), torch.from_numpy(y))
    assert same(got.item(), float(roc_auc_score(y, s)), 1e-12)


def test_auroc_int64_scores_one_apart_past_2_53_are_not_ties() -> None:
    near = torch.tensor([2**53, 2**53 + 1, 2**53 + 2, 2**53 + 3])  # sklearn ranks them apart; float64 ties them
    assert auroc(near, torch.tensor([False, True, False, True])).item() == 0.75
