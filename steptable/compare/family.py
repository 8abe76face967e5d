"""Which of several arms differ from the baseline once it is taken into account that several were compared. Pure.

Each arm's difference from the baseline is tested on its own at 5% (its 95% interval excludes 0). Of many arms
that do not differ, some pass that test by chance, and the best of them nearly always looks it: a sweep of 100 arms
of one process called its best arm better "beyond chance" in 20% of sweeps. A metric's arms are one *family*:
Holm's step-down procedure on their p-values (:meth:`steptable.compare.stats.Difference.p_value`) keeps the chance
of calling any arm of the family apart, where none is, at most ``LEVEL`` (under any dependence between the tests:
they share the baseline), and loses less power than Bonferroni's ``LEVEL / m`` for each.

Holm: the ``m`` p-values in increasing order, the k-th (from 1) is rejected while ``p_(k) <= LEVEL / (m - k + 1)``;
at the first that is not, it and every larger one are kept. An arm without a p-value (no interval) is no test and
not counted in ``m``. With one test (two arms) it is the test itself.
"""

from __future__ import annotations

from collections.abc import Sequence

#: the family-wise level: the chance that any arm of one metric is called apart from the baseline where none is
LEVEL = 0.05


def holm(pvalues: Sequence[float | None], level: float = LEVEL) -> list[bool]:
    """For each of ``pvalues`` (None: no test), whether Holm's step-down procedure at family-wise ``level`` rejects
    it (see the module doc). Ties keep their order; NaN is never rejected."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None and p == p)
    m = sum(p is not None for p in pvalues)
    out = [False] * len(pvalues)
    for k, (p, i) in enumerate(tested):
        if p > level / (m - k):
            break
        out[i] = True
    return out
