"""Statistics of one column for the summary: first / last / min / max and the recent trend (tr%). Pure; the
definitions are in steptable.summary's module doc."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from steptable.alerts import cell_float

TREND_SHARE = 0.1
TREND_NOISE_MIN = 20  # values the noise of tr% is read from, at least (the last 2 windows when they hold more)
TREND_SE = 2.0  # a difference of the window medians within this many standard errors reads as no trend


@dataclass
class ColStats:
    """Raw statistics of one column; ``present`` counts finite numeric values, ``logged`` those and inf / logged NaN."""

    present: int = 0
    logged: int = 0
    first: float = math.nan
    last: float = math.nan
    lo: float = math.nan
    hi: float = math.nan
    trend: float | None = None  # percent, see the module doc
    last_text: str = ""  # last non-numeric text cell, shown when the column has no numbers

    @property
    def varies(self) -> bool:
        return self.present >= 2 and self.lo != self.hi


def column_stats(values: Sequence[Any], nan_logged: bool = False) -> ColStats:
    """first / last / min / max / trend of one column (see the module doc)."""
    st = ColStats()
    xs: list[float] = []
    last = math.nan  # the last number, inf included: a KL that went to inf must not read as its last finite value
    for v in values:
        x = v if type(v) is float else cell_float(v)
        if x is None:
            if isinstance(v, str) and v.strip():
                st.last_text = v
        elif math.isfinite(x):
            xs.append(x)
            last = x
            st.logged += 1
        elif x == x or nan_logged:  # inf; a NaN only where it was logged (column() pads absent cells with NaN)
            last = x
            st.logged += 1
    st.last = last
    if xs:
        st.present = len(xs)
        st.first, st.lo, st.hi = xs[0], min(xs), max(xs)
        st.trend = trend_pct(xs)
    return st


def trend_pct(xs: Sequence[float]) -> float | None:
    """The recent trend in percent, 0 within the noise (see the module doc). ``xs``: finite values."""
    n = len(xs)
    if n < 2:
        return None
    k = min(max(1, round(n * TREND_SHARE)), n // 2)
    # Only the recent part is read (the two windows, at least the last TREND_NOISE_MIN values): O(k log k).
    recent = xs[max(0, n - max(2 * k, TREND_NOISE_MIN)) :]
    mags = sorted(map(abs, recent))
    scale = mags[-1]
    if not scale > 0:
        return 0.0
    if not math.isfinite(scale):
        return None
    ys = [x / scale for x in recent]  # |y| <= 1: values near the float limit (1e308) cannot overflow below
    prev, last = _median(ys[-2 * k : -k]), _median(ys[-k:])
    # The noise of one value: successive differences (the slope, their mean, taken out) have sd noise * sqrt(2),
    # so a trend is not read as noise. A median of k values has a standard error of about 1.2533 * noise / sqrt(k).
    # (At most ~2000 pairs, spread over the windows: plenty for an sd.)
    stride = max(1, (len(ys) - 1) // 2000)
    diffs = [ys[i + 1] - ys[i] for i in range(0, len(ys) - 1, stride)]
    slope = sum(diffs) / len(diffs)
    noise = math.sqrt(sum((d - slope) ** 2 for d in diffs) / (2 * len(diffs)))
    change = last - prev
    if abs(change) <= TREND_SE * 1.2533 * noise * math.sqrt(2 / k):
        return 0.0
    return 100 * change / max(abs(prev), mags[len(mags) // 2] / scale / 4, noise)


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else 0.5 * (s[m - 1] + s[m])
