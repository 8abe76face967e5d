"""Exact binary AUROC on the device: no host sync, no data-dependent shape.

The AUROC equals the Mann-Whitney U statistic divided by ``P * Q`` (P positives, Q negatives), with ties counted
one half (mid-ranks), which is what ``sklearn.metrics.roc_auc_score`` returns for 0/1 labels (here every nonzero
label is positive; see ``auroc``)::

    AUROC = sum over positives i of [ #neg with s < s_i  +  0.5 * #neg with s == s_i ]  /  (P * Q)

Computation, all with fixed shapes: sort the N scores once; take the cumulative count ``C`` of selected negatives
in sorted order (``C[0] = 0``); tie groups are delimited by ``sorted[k] != sorted[k-1]``, and every sorted
position gets the start ``l`` and the end ``r`` (exclusive) of its group from a running max of group starts and a
reversed running min of group ends (``cummax``/``cummin``, O(N), no ``unique``), so ``#neg below = C[l]`` and
``#neg below or equal = C[r]``; the doubled numerator ``sum_pos (C[l] + C[r])`` is an exact int64. Rows outside
the selection keep their place in the sort but weigh nothing, which replaces boolean indexing (a data-dependent
shape, hence a host sync). Only the final division runs in float64: the result agrees with sklearn to ~1e-16.
"""

from __future__ import annotations

import torch
from torch import Tensor

from steptable.diagnostics._util import (
    STAT_DTYPE,
    as_1d,
    as_mask,
    as_order,
    check_nan_policy,
    labels_to_bool,
    no_autocast,
    to_device,
)

__all__ = ["auroc"]


def auroc_core(scores: Tensor, positive: Tensor, use: Tensor) -> Tensor:
    """AUROC of float64 or int64 ``scores`` vs bool ``positive`` over the rows where ``use`` is True (0-d float64).

    Rows with ``use`` False may hold anything (they are zeroed before sorting); the rows used must be finite.
    nan when the used rows hold a single class or none.
    """
    n = scores.shape[0]
    dev = scores.device
    s = torch.where(use, scores, torch.zeros((), dtype=scores.dtype, device=dev))
    sorted_s, order = torch.sort(s)
    pos = (use & positive).index_select(0, order)
    neg = (use & ~positive).index_select(0, order)
    cum = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    cum[1:] = torch.cumsum(neg.to(torch.int64), 0)
    # tie groups of the sorted scores: [first, last) in sorted positions, by a running max / reversed running min
    k = torch.arange(n, device=dev)
    new_group = torch.ones(n, dtype=torch.bool, device=dev)
    new_group[1:] = sorted_s[1:] != sorted_s[:-1]
    first = torch.cummax(torch.where(new_group, k, 0), 0).values
    ends_group = torch.roll(new_group, -1, 0)  # position k is the last of its group
    last = torch.cummin(torch.where(ends_group, k + 1, n).flip(0), 0).values.flip(0)
    twice = cum.index_select(0, first) + cum.index_select(0, last)  # 2 * (#neg below + half the tied #neg)
    numerator2 = torch.where(pos, twice, 0).sum()
    n_pos = pos.sum()
    n_neg = neg.sum()
    denom2 = 2 * n_pos * n_neg
    value = numerator2.to(STAT_DTYPE) / denom2.to(STAT_DTYPE)
    return torch.where(denom2 > 0, value, float("nan"))


def auroc(
    scores: Tensor,
    labels: Tensor,
    mask: Tensor | None = None,
    *,
    nan_policy: str = "propagate",
) -> Tensor:
    """Exact binary AUROC of ``scores`` against ``labels`` over the rows selected by ``mask``; a 0-d float64 tensor.

    Matches ``sklearn.metrics.roc_auc_score(labels[mask], scores[mask])`` (ties count one half) for bool and 0/1
    labels (see ``labels`` for other codings), without its failure modes: no sigmoid or clipping of the scores
    (any real values), nan (not 0.0 or an error) when the selection is empty or holds one class, nan for
    non-finite scores, and no host synchronisation (the result stays on the scores' device; call ``float()``
    yourself when you need it on the host).

    scores      [N] tensor of any floating dtype (computed in float64; bf16/fp16 ties stay ties) or integer dtype
                (ranked as int64: values past 2**53 one apart are no ties, as in sklearn).
    labels      [N] bool, or numbers where ``!= 0`` is positive (a nan/inf float label counts as non-finite).
                sklearn takes the larger of two label values as positive instead: the two agree for {0, k > 0},
                but a coding without a 0 ({-1, +1}, {1, 2}) is all positive here (nan) and {-1, 0} is inverted,
                so pass ``labels == pos_label`` for those.
    mask        optional [N] bool selection (e.g. ``advantage > 0``); None selects every row.
    nan_policy  "propagate": a selected row with a non-finite score or label makes the result nan;
                "drop": such rows are left out (by mask weights, never by indexing).
    """
    policy = check_nan_policy(nan_policy)
    as_1d(scores, "scores")
    n = scores.shape[0]
    as_1d(labels, "labels", n)
    with no_autocast(scores.device):
        s = as_order(scores)
        positive, label_ok = labels_to_bool(to_device(labels, scores.device))
        sel = as_mask(mask, n, scores.device)
        ok = torch.isfinite(s) & label_ok
        value = auroc_core(s, positive, sel & ok)
        if policy == "propagate":
            value = torch.where((sel & ~ok).any(), float("nan"), value)
        return value
