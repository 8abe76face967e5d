"""References and batches for the diagnostics tests: sklearn's AUROC and scikit-image's Otsu thresholds with
nan for the cases they refuse, NaN-aware comparisons, seeded batches of activations, the devices to compare on
(the CPU, and CUDA where there is one). Imported by test modules that have checked sklearn and scikit-image are
there (pytest.importorskip)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from steptable.diagnostics import COLUMNS

NAN = float("nan")
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
#: The reference comparisons run where the tensors are: the CPU always, the GPU where there is one (sorts, cumsums
#: and the histogram's binning are other kernels there).
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


def same(a: float, b: float, tol: float = 0.0) -> bool:
    """Equal within ``tol``, or both NaN."""
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def sk_auroc(y: np.ndarray, s: np.ndarray) -> float:
    """sklearn's AUROC of scores ``s`` for labels ``y``; nan where one class is missing."""
    from sklearn.metrics import roc_auc_score

    if y.size == 0 or y.min() == y.max():
        return NAN  # sklearn raises (or warns and returns nan): nan is the contract here
    return float(roc_auc_score(y, s))


def sk_otsu(x: np.ndarray) -> tuple[float, float]:
    """scikit-image's two three-class Otsu thresholds of ``x`` (256 bins); nan where it refuses."""
    from skimage.filters import threshold_multiotsu

    try:
        lo, hi = threshold_multiotsu(x.astype(np.float64), classes=3, nbins=256)
    except ValueError:  # fewer than 3 distinct binned values
        return NAN, NAN
    return float(lo), float(hi)


def make_batch(g: Any, n: int, d: int = 16, dtype: Any = torch.float32) -> tuple[Any, Any, Any, Any]:
    """(activations, v_act, hack mask, advantages) of ``n`` rollouts, a quarter hacking along v_act."""
    hack = torch.rand(n, generator=g) < 0.25
    v = torch.randn(d, generator=g)
    act = torch.randn(n, d, generator=g) + hack[:, None] * 0.4 * v
    adv = torch.randn(n, generator=g)
    return act.to(dtype), v.to(dtype), hack, adv


def small_batch(g: Any, n: int, d: int = 8, device: str = "cpu") -> tuple[Any, Any, Any, Any]:
    """(activations, v_act, hack mask, advantages) of ``n`` rollouts on ``device``, 30% hacking."""
    hack = torch.rand(n, generator=g) < 0.3
    v = torch.randn(d, generator=g)
    act = torch.randn(n, d, generator=g) + hack[:, None] * 0.5 * v
    return act.to(device), v.to(device), hack.to(device), torch.randn(n, generator=g).to(device)


def same_row(a: dict[str, float], b: dict[str, float], tol: float = 1e-12) -> bool:
    """Two rows of the monitor's columns agree within ``tol`` (NaN equal to NaN)."""
    return all((math.isnan(a[k]) and math.isnan(b[k])) or abs(a[k] - b[k]) <= tol for k in COLUMNS)
