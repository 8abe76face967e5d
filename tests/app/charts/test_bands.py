"""A seed group's band on the chart (steptable.app.charts.bands): per pixel column the mean of the seeds' means and
their 95% t interval (scipy's quantile on the same numbers), one seed's min-max where only it has values, prefix
sums kept up to date with appended rows, and the band drawn under the group's mean line."""

from __future__ import annotations

import math
import random
import statistics

from rich.style import Style
from scipy import stats

from steptable.app.charts.bands import Band, Seed, Sums
from steptable.app.charts.draw import Line, Styles, chart
from steptable.ingest.pyramid import Pyramid

STYLES = Styles(arms=[Style(color="red"), Style(color="blue")], alert=Style(color="yellow"), axis=Style(dim=True),
                cross=Style(reverse=True))


def _seed(values: list[float | None], x: list[float] | None = None) -> Seed:
    sums = Sums()
    sums.extend(values)
    return Seed(x or [float(i) for i in range(len(values))], Pyramid(values), sums)


def test_sums_leave_out_nan_inf_and_absent_rows_and_extend_as_rows_come() -> None:
    vals: list[float | None] = [1.0, math.nan, 3.0, None, math.inf, 5.0]
    whole = Sums()
    whole.extend(vals)
    grown = Sums()
    for v in vals:  # one row at a time, as a live run appends
        grown.extend([v])
    assert list(whole.total) == list(grown.total) and list(whole.count) == list(grown.count)
    assert whole.mean(0, 6) == 3.0 and whole.mean(1, 2) is None and whole.mean(3, 6) == 5.0


def test_band_is_the_t_interval_of_the_seeds_column_means() -> None:
    rng = random.Random(3)
    seeds = [[1.0 + 0.1 * s + rng.gauss(0, 0.2) for _ in range(400)] for s in range(3)]
    band, mean = Band("g", [_seed(v) for v in seeds]).buckets(0.0, 400.0, 8)  # 50 rows a column
    for p in range(8):
        means = [statistics.fmean(v[50 * p : 50 * (p + 1)]) for v in seeds]
        m = statistics.fmean(means)
        half = stats.t.ppf(0.975, 2) * statistics.stdev(means) / math.sqrt(3)
        assert math.isclose(mean[p].lo, m, abs_tol=1e-12) and mean[p].lo == mean[p].hi
        assert math.isclose(band[p].lo, m - half, abs_tol=1e-9) and math.isclose(band[p].hi, m + half, abs_tol=1e-9)


def test_one_seed_with_values_gives_its_min_max_and_none_an_empty_column() -> None:
    a = [0.0, 4.0, None, None]
    b: list[float | None] = [2.0, 2.0, None, 1.0]
    c: list[float | None] = [None, None, None, 3.0]
    band, mean = Band("g", [_seed(a), _seed(b), _seed(c)]).buckets(0.0, 4.0, 4)
    assert band[2].empty and mean[2].empty  # no seed has a value at x 2
    assert (mean[3].lo, band[3].lo, band[3].hi) == (2.0, 2.0 - stats.t.ppf(0.975, 1) * math.sqrt(2) / math.sqrt(2),
                                                   2.0 + stats.t.ppf(0.975, 1) * math.sqrt(2) / math.sqrt(2))
    alone, _ = Band("g", [_seed([1.0, 5.0, 3.0, None]), _seed([None] * 4)]).buckets(0.0, 4.0, 1)
    assert (alone[0].lo, alone[0].hi) == (1.0, 5.0)  # one seed: its rows' extremes


def test_seeds_on_different_x_are_read_at_the_same_x() -> None:
    """On tokens, a seed that logs 4x the tokens a step reaches x 400 at step 100: columns are x, not rows."""
    slow = _seed([float(i) for i in range(400)], [float(i) for i in range(400)])
    fast = _seed([float(4 * i) for i in range(100)], [float(4 * i) for i in range(100)])
    _, mean = Band("g", [slow, fast]).buckets(0.0, 400.0, 4)
    assert [b.lo for b in mean] == [48.75, 148.75, 248.75, 348.75]  # (49.5 + 48) / 2: each seed's rows in x 0-100


def test_chart_draws_the_band_faint_under_the_groups_mean_line() -> None:
    rng = random.Random(1)
    group = Band("g", [_seed([rng.gauss(0, 1) for _ in range(2000)]) for _ in range(3)])
    out = chart("t", [], (0.0, 1999.0), 80, 20, STYLES, bands=[(1, group)])
    plot = out[2:-2]
    dim = blue = 0
    for text in plot:
        for span in text.spans:
            style = span.style if isinstance(span.style, Style) else Style.parse(str(span.style))
            if style.color is not None and style.color.name == "blue":
                cells = sum(ch != " " for ch in text.plain[span.start : span.end])
                dim += cells if style.dim else 0
                blue += cells if not style.dim else 0
    assert dim > 0 and blue > 0  # the band (faint) and the mean line (full colour), both in the group's colour
    line = chart("t", [Line("a", [float(i) for i in range(10)], Pyramid([1.0] * 10))], (0.0, 9.0), 40, 10, STYLES)
    assert not any(getattr(s.style, "dim", False) for t in line[2:-2] for s in t.spans
                   if t.plain[s.start:s.end].strip())  # a plain line is not faint


def test_seeds_near_the_largest_float_draw_a_band_without_overflow() -> None:
    """Seeds diverged to +-1e200 (finite): the squares of their deviations are past the largest float; the band is
    drawn (as wide as the plot) and the mean line kept, no OverflowError (the chart view exited the watch)."""
    group = Band("g", [_seed([1e200] * 50), _seed([-1e200] * 50), _seed([1.0] * 50)])
    band, mean = group.buckets(0.0, 50.0, 5)
    assert all(b.lo <= m.lo <= b.hi for b, m in zip(band, mean, strict=True))
    out = chart("t", [], (0.0, 49.0), 40, 10, STYLES, bands=[(0, group)])
    assert len(out) > 4
