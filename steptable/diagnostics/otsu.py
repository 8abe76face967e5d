"""Three-class Otsu thresholds on the device, matching ``skimage.filters.threshold_multiotsu(classes=3)``.

What skimage does, and what is reproduced here (float input, ``nbins`` bins):

1. Histogram as ``numpy.histogram(x, bins=nbins)``: range [min, max] (widened to [v - 0.5, v + 0.5] for a constant
   input); edges ``arange(nbins + 1) * ((max - min) / nbins) + min`` with the last edge set to ``max``; bin index
   ``trunc((x - min) / (max - min) * nbins)``, the value ``max`` folded into the last bin, then corrected by one
   where ``x < edge[k]`` or ``x >= edge[k + 1]`` (the last bin is closed). Centers ``(edge[k] + edge[k + 1]) / 2``.
2. Fewer than 3 non-empty bins: skimage raises; here both thresholds are nan. Exactly 3: the centers of the first
   two non-empty bins.
3. Otherwise a brute-force search over bin pairs ``0 <= i < j <= nbins - 2`` (classes ``[0, i]``, ``[i+1, j]``,
   ``[j+1, nbins-1]``) of ``sigma = V(0, i) + V(j+1, nbins-1) + V(i+1, j)`` with ``V(a, b) = S1(a, b)^2 / S0(a, b)``
   (0 for an empty class), keeping the first maximum in (i, j) lexicographic order (skimage's strict ``>``;
   ``torch.argmax`` on the row-major grid also returns the first maximum). Two quirks of skimage's LUT code are
   kept on purpose so the same pair wins: bin 0 enters the first moment with weight 1 (not 0), and ``V(0, 0)`` is
   0. The thresholds are ``centers[i]`` and ``centers[j]``.

Precision and near-ties. The whole grid (all O(nbins^2) pairs at once) is evaluated in float64 from exact integer
cumulative counts, so pairs whose classes hold the same bins (thresholds moved across empty bins) get bit-identical
sigma and resolve to the first pair exactly as in skimage. skimage itself accumulates the moments in float32
(sequential float32 cumsums of the normalised histogram); when two different splits have sigma within float32
rounding (relative gap ~1e-6), skimage's winner is decided by that rounding and this function returns the split
that is larger in (near-)exact arithmetic instead. That is the only known difference; the tests count it.

Inputs are upcast to float64 first, so results equal skimage on ``values.astype(float64)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from steptable.diagnostics._util import STAT_DTYPE, as_1d, as_mask, as_stat, check_nan_policy, check_nbins, no_autocast

__all__ = ["multiotsu"]

_NAN = float("nan")


def histogram(values: Tensor, use: Tensor, nbins: int) -> tuple[Tensor, Tensor, Tensor]:
    """numpy-equal histogram of float64 ``values[use]`` over its own [min, max]: (int64 counts, centers, broken).

    ``broken`` (0-d bool) is True when numpy would refuse the bins (range too small for ``nbins`` distinct edges)
    or when no value is used. Unused rows go to a trash bin, so every shape is fixed.
    """
    dev = values.device
    if values.numel() == 0:  # a host-known shape: stand in one unused value so the reductions are defined
        values = torch.zeros(1, dtype=values.dtype, device=dev)
        use = torch.zeros(1, dtype=torch.bool, device=dev)
    lo = torch.where(use, values, float("inf")).amin()
    hi = torch.where(use, values, float("-inf")).amax()
    same = lo == hi
    first = torch.where(same, lo - 0.5, lo)
    last = torch.where(same, hi + 0.5, hi)
    span = last - first
    edges = torch.arange(nbins + 1, dtype=STAT_DTYPE, device=dev) * (span / nbins) + first
    edges = torch.cat([edges[:-1], last.reshape(1)])
    x = torch.where(use, values, first)
    frac = ((x - first) / span) * nbins
    frac = torch.nan_to_num(frac, nan=0.0).clamp(0, nbins)
    idx = frac.to(torch.int64)  # truncation, like numpy's astype(intp)
    idx = torch.where(idx == nbins, nbins - 1, idx)
    idx = torch.where(x < edges.index_select(0, idx), idx - 1, idx).clamp(0, nbins - 1)
    upper = edges.index_select(0, idx + 1)
    idx = torch.where((x >= upper) & (idx != nbins - 1), idx + 1, idx)
    idx = torch.where(use, idx, nbins)  # trash bin
    counts = torch.zeros(nbins + 1, dtype=torch.int64, device=dev)
    counts.scatter_add_(0, idx, torch.ones_like(idx))
    centers = (edges[:-1] + edges[1:]) / 2.0
    broken = (edges[:-1] >= edges[1:]).any() | ~use.any() | ~torch.isfinite(span)
    return counts[:nbins], centers, broken


_PENALTY: dict[tuple[int, torch.device], Tensor] = {}


def _pair_penalty(nbins: int, device: torch.device) -> Tensor:
    """0 on the pairs skimage searches (0 <= i < j <= nbins - 2), -inf elsewhere ([nbins, nbins] float64, cached)."""
    key = (nbins, device)
    cached = _PENALTY.get(key)
    if cached is None:
        ar = torch.arange(nbins, device=device)
        allowed = (ar[None, :] > ar[:, None]) & (ar[None, :] <= nbins - 2)
        cached = torch.zeros(nbins, nbins, dtype=STAT_DTYPE, device=device).masked_fill_(~allowed, float("-inf"))
        if not (device.type == "cuda" and torch.cuda.is_current_stream_capturing()):
            _PENALTY[key] = cached  # a tensor made inside a CUDA graph capture holds nothing until a replay
    return cached


def _best_pair(counts: Tensor) -> tuple[Tensor, Tensor]:
    """Indices (i, j) of skimage's 3-class split of a histogram (see the module docstring)."""
    nbins = counts.shape[0]
    dev = counts.device
    c = counts.to(STAT_DTYPE)
    # bin k weighs k in the first moment, except bin 0 which weighs 1 (skimage quirk: first_moment[0] = prob[0])
    weight = torch.arange(nbins, dtype=STAT_DTYPE, device=dev).clamp(min=1.0)
    w_cum = torch.cumsum(c, 0)  # integers below 2**53: exact in any summation order
    m_cum = torch.cumsum(weight * c, 0)
    w_all, m_all = w_cum[-1], m_cum[-1]
    # V(a, b) = S1^2 / S0, and 0 for an empty class. Counts are integers, so a non-empty class has S0 >= 1 and an
    # empty one has S1 = 0: clamping S0 at 0.5 gives exactly 0 for empty classes and changes nothing else.
    low = m_cum * m_cum / w_cum.clamp(min=0.5)  # V(0, i)
    low = torch.cat([torch.zeros(1, dtype=STAT_DTYPE, device=dev), low[1:]])  # skimage's LUT leaves V(0, 0) = 0
    top = (m_all - m_cum) * (m_all - m_cum) / (w_all - w_cum).clamp(min=0.5)  # V(j+1, nbins-1)
    dm = m_cum[None, :] - m_cum[:, None]
    mid = dm * dm / (w_cum[None, :] - w_cum[:, None]).clamp(min=0.5)  # V(i+1, j), valid for j > i
    sigma = (low[:, None] + top[None, :]) + mid + _pair_penalty(nbins, dev)
    flat = torch.argmax(sigma.reshape(-1))  # first maximum in row-major = (i, j) lexicographic order
    return flat // nbins, flat % nbins


def otsu_core(values: Tensor, use: Tensor, nbins: int = 256) -> tuple[Tensor, Tensor]:
    """(tlo, thi) of float64 ``values[use]`` (used rows must be finite); nan pair when not splittable."""
    counts, centers, broken = histogram(values, use, nbins)
    i, j = _best_pair(counts)
    nonempty = counts > 0
    n_values = nonempty.sum()
    # exactly three non-empty bins: skimage returns the first two of them
    nz_rank = torch.cumsum(nonempty.to(torch.int64), 0)
    first_nz = torch.argmax((nz_rank >= 1).to(torch.int32))
    second_nz = torch.argmax((nz_rank >= 2).to(torch.int32))
    three = n_values == 3
    i = torch.where(three, first_nz, i)
    j = torch.where(three, second_nz, j)
    fail = broken | (n_values < 3)
    tlo = torch.where(fail, _NAN, centers.index_select(0, i.reshape(1)).reshape(()))
    thi = torch.where(fail, _NAN, centers.index_select(0, j.reshape(1)).reshape(()))
    return tlo, thi


def multiotsu(
    values: Tensor,
    nbins: int = 256,
    mask: Tensor | None = None,
    *,
    nan_policy: str = "propagate",
) -> tuple[Tensor, Tensor]:
    """Two thresholds ``tlo < thi`` (0-d float64 tensors) of a 3-class Otsu split of ``values[mask]``.

    Equals ``skimage.filters.threshold_multiotsu(values[mask].astype(float64), classes=3, nbins=nbins)`` (see the
    module docstring for the near-tie caveat), evaluated on the device without host sync: every threshold pair
    is scored at once and the first maximum wins. Returns nan thresholds where skimage raises (fewer than 3
    distinct binned values, empty selection).

    values      any-shape floating tensor (flattened; computed in float64).
    nbins       number of histogram bins (>= 3).
    mask        optional bool selection, same number of elements as ``values``.
    nan_policy  "propagate": a selected non-finite value makes both thresholds nan; "drop": such values are
                left out of the histogram.
    """
    policy = check_nan_policy(nan_policy)
    nbins = check_nbins(nbins)
    flat = values.reshape(-1)
    as_1d(flat, "values")
    if mask is not None:
        mask = mask.reshape(-1)
    with no_autocast(values.device):
        v = as_stat(flat)
        sel = as_mask(mask, v.shape[0], v.device)
        ok = torch.isfinite(v)
        tlo, thi = otsu_core(v, sel & ok, nbins)
        if policy == "propagate":
            bad = (sel & ~ok).any()
            tlo = torch.where(bad, _NAN, tlo)
            thi = torch.where(bad, _NAN, thi)
        return tlo, thi
