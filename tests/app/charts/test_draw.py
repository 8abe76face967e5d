"""The chart drawing (steptable.app.charts.draw): spikes survive any zoom, NaN markers, axes, log scale, colours."""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from typing import Any

import pytest
from rich.style import Style

from steptable.app.charts.draw import GUTTER, MARKER, Line, Styles, chart, pixel_edges
from steptable.ingest.pyramid import Pyramid

STYLES = Styles(arms=[Style(color="red"), Style(color="blue")], alert=Style(color="yellow"), axis=Style(dim=True),
                cross=Style(reverse=True))


def _plot(lines: list[Any]) -> list[str]:
    return [t.plain[GUTTER:] for t in lines[2:-2]]  # (title, marker row; x axis and labels)


@pytest.mark.parametrize("view", [(0, 999_999), (700_000, 800_000), (777_700, 777_900), (777_777, 777_778)])
def test_a_spike_of_one_point_in_a_million_reaches_the_top_at_every_zoom(view: tuple[int, int]) -> None:
    n = 1_000_000
    vals = [1.0] * n
    vals[777_777] = 25.0
    line = Line("a", [float(i) for i in range(n)], Pyramid(vals))
    out = chart("t", [line], (float(view[0]), float(view[1])), 80, 20, STYLES)
    plot = _plot(out)
    top = plot[0]
    assert top.strip(), "nothing on the plot's top row: the spike was averaged away"
    tall = [c for c in range(len(top)) if top[c] != " "]
    assert all(plot[-1][c] != " " or plot[-2][c] != " " for c in tall) or view[1] - view[0] < 5  # a full bar


def test_nan_marker_and_labelled_axes() -> None:
    vals: list[float | None] = [float(i % 7) for i in range(1000)]
    vals[500] = math.nan
    vals[600] = None  # absent: no marker
    out = chart("t", [Line("a", [float(i) for i in range(1000)], Pyramid(vals))], (0.0, 999.0), 60, 14, STYLES)
    marks = out[1].plain[GUTTER:]
    assert marks.count(MARKER) == 1 and abs(marks.index(MARKER) - 500 * (60 - GUTTER) / 1000) <= 1
    assert any(s.style == STYLES.alert for s in out[1].spans)
    ys = [t.plain[: GUTTER - 2].strip() for t in out[2:-2] if t.plain[GUTTER - 1] == "┤"]
    assert "0" in ys and "6" in ys
    assert "500" in out[-1].plain and "(step)" in out[-1].plain


def test_log_y_and_overlay_colours() -> None:
    x = [float(i) for i in range(100)]
    a = Line("a", x, Pyramid([10.0 ** (i / 20) for i in range(100)]))
    b = Line("b", x, Pyramid([1.0] * 100))
    out = chart("t", [a, b], (0.0, 99.0), 60, 14, STYLES, log=True)
    ys = [t.plain[: GUTTER - 2].strip() for t in out[2:-2] if t.plain[GUTTER - 1] == "┤"]
    assert {"1", "100", "10k"} <= set(ys)  # ticks at decades, evenly apart
    colours = {str(s.style.color.name) for t in out[2:-2] for s in t.spans
               if isinstance(s.style, Style) and s.style.color is not None}
    assert {"red", "blue"} <= colours


@pytest.mark.parametrize("seed", range(5))
def test_pixel_edges_are_the_plain_search_on_any_x(seed: int) -> None:
    """The edges searched near the last gap are those of a search of every row: even, uneven, repeated x."""
    r = random.Random(seed)
    xs: list[float] = []
    for _ in range(5000):
        xs.append((xs[-1] if xs else 0.0) + r.choice((0.0, 0.5, 1.0, 1.0, 1.0, 7.0, 300.0)))
    for x0, x1 in ((0.0, xs[-1]), (xs[100], xs[4000]), (-50.0, xs[-1] + 50.0), (xs[10], xs[10] + 3.0)):
        for pixels in (1, 7, 302):
            span = (x1 - x0) / pixels
            plain = [bisect_left(xs, x0 + span * p) for p in range(pixels)] + [bisect_right(xs, x1)]
            assert pixel_edges(xs, len(xs), x0, x1, pixels) == plain
