"""One metric's chart as lines of text: every arm overlaid in braille (2 x 4 dots a cell), each pixel column drawn
from the min to the max of its rows (a one-point spike reaches its full height), joined to the column before; NaN /
inf in a column drawn as a marker on a row of their own; a y axis with labelled ticks, an x axis in the chosen x, a
crosshair column. Pure apart from Rich's Text: the pyramid gives the buckets, so a draw costs O(width * log rows)."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import groupby
from typing import Protocol

from rich.style import Style
from rich.text import Span, Text

from steptable.ingest.pyramid import Bucket, Pyramid
from steptable.table.formatting import fmt_auto

#: braille dot bits by (row 0-3, column 0-1) within a cell
_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
#: the y axis gutter: a tick label, a space and the axis
GUTTER = 9
MARKER = "×"


@dataclass
class Line:
    """One arm's series: its x per row (non-decreasing), the pyramid of its values, and optionally a smoothed one
    drawn over the raw series (which is then drawn faint)."""

    label: str
    x: Sequence[float]
    raw: Pyramid
    smooth: Pyramid | None = None

    @property
    def rows(self) -> int:
        return min(len(self.x), len(self.raw))


@dataclass(frozen=True)
class Styles:
    """The arm colours (by index, cycled), the alert colour of NaN markers, axis and crosshair styles."""

    arms: Sequence[Style]
    alert: Style
    axis: Style
    cross: Style


class BandLayer(Protocol):
    """A seed group's layer (``steptable.app.charts.bands.Band``): per pixel column of [x0, x1], its band (lo-hi
    buckets) and its mean (one-value buckets)."""

    def buckets(self, x0: float, x1: float, pixels: int) -> tuple[list[Bucket], list[Bucket]]: ...


def x_range(lines: Sequence[Line]) -> tuple[float, float] | None:
    """The finite x of every arm's rows: (lowest, highest); None when there is none."""
    lows = []
    for ln in lines:
        first = bisect_right(ln.x, -math.inf, 0, ln.rows)  # (rows before an x key's first value hold -inf)
        if first < ln.rows and math.isfinite(ln.x[first]):
            lows.append(ln.x[first])
    highs = [ln.x[ln.rows - 1] for ln in lines if ln.rows and math.isfinite(ln.x[ln.rows - 1])]
    return (min(lows), max(highs)) if lows and highs else None


def pixel_edges(x: Sequence[float], rows: int, x0: float, x1: float, pixels: int) -> list[int]:
    """Row edges of ``pixels`` columns splitting [x0, x1] evenly in x (the last one ends x1 included)."""
    span = (x1 - x0) / pixels
    edges = []
    at = gap = 0
    for p in range(pixels):
        v = x0 + span * p
        # searched first near where the last gap between edges puts it (an evenly spaced x, the step: a few
        # comparisons, not log2 rows), the rest of the rows where that misses
        lo, hi = min(max(at, at + gap - 2), rows), min(rows, at + gap + 2)
        if lo > at and x[lo - 1] >= v:
            lo = at
        if hi < rows and x[hi] < v:
            hi = rows
        new = bisect_left(x, v, lo, hi)
        gap, at = new - at, new
        edges.append(at)
    edges.append(bisect_right(x, x1, at, rows))
    return edges


def nice_ticks(lo: float, hi: float, most: int) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten apart) within [lo, hi], at most ``most`` of them."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo or most < 1:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / most
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step)
    return [t * step for t in range(first, math.floor(hi / step) + 1)]


def _tf(v: float, log: bool) -> float:
    if not log:
        return v
    return math.log10(v) if v > 0 else -math.inf


def y_range(buckets: Sequence[Sequence[Bucket]], log: bool) -> tuple[float, float] | None:
    """Lowest and highest finite value (log10 of the positive ones with ``log``) over the buckets in view."""
    if log:
        lows = [t for bs in buckets for b in bs if not b.empty and math.isfinite(t := _tf(b.lo, log))]
        highs = [t for bs in buckets for b in bs if not b.empty and math.isfinite(t := _tf(b.hi, log))]
    else:  # (a bucket's extremes are finite when it has any: the pyramid keeps NaN / inf apart)
        lows = [b.lo for bs in buckets for b in bs if b.lo <= b.hi]
        highs = [b.hi for bs in buckets for b in bs if b.lo <= b.hi]
    if not lows and not highs:
        return None
    lo, hi = min(lows + highs), max(lows + highs)
    if hi <= lo:  # a constant: a band around it
        pad = abs(lo) * 0.05 or 0.5
        lo, hi = lo - pad, hi + pad
    return lo, hi


def _plot_bits(buckets: Sequence[Bucket], lo: float, hi: float, log: bool, width: int, height: int) -> bytes:
    """One layer: braille bits per cell (row-major), each pixel column from its min to its max, joined to the
    column before it."""
    cols = bytearray(width * height)  # column-major while drawing: a cell column's rows lie together
    dots = height * 4
    scale = (dots - 1) / (hi - lo)
    prev: tuple[int, int] | None = None
    top_dot = dots - 1
    for p, b in enumerate(buckets[: width * 2]):
        if b.lo > b.hi:  # empty
            prev = None
            continue
        tlo, thi = (_tf(b.lo, log), _tf(b.hi, log)) if log else (b.lo, b.hi)
        # (conditional expressions, not min / max calls: this runs per pixel column and layer)
        thi = lo if thi < lo else hi if thi > hi else thi
        tlo = lo if tlo < lo else hi if tlo > hi else tlo
        top = top_dot - round((thi - lo) * scale)
        bottom = top_dot - round((tlo - lo) * scale)
        a, z = top, bottom
        if prev is not None:  # the line goes on from the column before: no gap between a fall and a rise
            a = top if top < prev[1] else prev[1]
            z = bottom if bottom > prev[0] else prev[0]
        prev = (top, bottom)
        cell, sub = divmod(p, 2)
        masks = _SPANS[sub]
        first, last = a >> 2, z >> 2
        at = cell * height
        if first == last:
            cols[at + first] |= masks[a & 3][z & 3]
            continue
        cols[at + first] |= masks[a & 3][3]
        cols[at + last] |= masks[0][z & 3]
        if last > first + 1:  # the cells between: the whole sub-column, OR'd in C
            cols[at + first + 1 : at + last] = cols[at + first + 1 : at + last].translate(_FILL[sub])
    return b"".join(cols[r::height] for r in range(height))


#: by pixel sub-column, first and last dot row (0-3): the bits of that run of dots in a cell
_SPANS = tuple(tuple(tuple(sum(_DOTS[d][sub] for d in range(i, j + 1)) for j in range(4)) for i in range(4))
               for sub in range(2))
#: by pixel sub-column: a cell's bits with that whole sub-column added
_FILL = tuple(bytes(b | _SPANS[sub][0][3] for b in range(256)) for sub in range(2))


def chart(
    title: str,
    lines: Sequence[Line],
    view: tuple[float, float],
    width: int,
    height: int,
    styles: Styles,
    *,
    log: bool = False,
    cross: int | None = None,
    fmt_x: str = "step",
    bands: Sequence[tuple[int, BandLayer]] = (),
) -> list[Text]:
    """The chart in ``width`` x ``height`` cells: a title line, the NaN marker row, the plot, the x axis and its
    labels. ``view``: the x range shown; ``cross``: the crosshair's cell column in the plot (None: none).
    ``bands``: (colour index, seed group) drawn as a faint band under every line and the group's mean line over it."""
    plot_w = max(width - GUTTER, 4)
    plot_h = max(height - 4, 2)
    x0, x1 = view
    if not x1 > x0:
        x1 = x0 + 1.0
    layers: list[tuple[int, int, list[Bucket]]] = []  # (arm, 2 group mean/1 smoothed/0 raw/-1 band, buckets)
    marks = [False] * plot_w
    for i, ln in enumerate(lines):
        edges = pixel_edges(ln.x, ln.rows, x0, x1, plot_w * 2)
        raw = ln.raw.buckets(edges)
        layers.append((i, 0, raw))
        if ln.smooth is not None:
            layers.append((i, 1, ln.smooth.buckets(edges)))
        for p, b in enumerate(raw):
            if b.bad:
                marks[p // 2] = True
    for arm, band in bands:  # priority -1: under every line; 2: its mean over everything
        area, mean = band.buckets(x0, x1, plot_w * 2)
        layers += [(arm, -1, area), (arm, 2, mean)]
        for p, b in enumerate(area):
            if b.bad:
                marks[p // 2] = True
    out = [Text(title, style="bold", no_wrap=True, overflow="ellipsis")]
    yr = y_range([bs for _, _, bs in layers], log)
    lo, hi = yr if yr is not None else (0.0, 1.0)
    grids = [(arm, pri, _plot_bits(bs, lo, hi, log, plot_w, plot_h)) for arm, pri, bs in layers]
    smoothed = any(pri == 1 for _, pri, _ in layers)
    looks = {(arm, pri): styles.arms[arm % len(styles.arms)]
             + (Style(dim=True) if pri < 0 or (smoothed and not pri) else Style()) for arm, pri, _ in layers}
    marked = [(c, c + 1, (-1, 0)) for c in range(plot_w) if marks[c]]
    out.append(Text(_pad("nan/inf", GUTTER - 2) + "  " + "".join(MARKER if m else " " for m in marks),
                    style=styles.axis, no_wrap=True,
                    spans=_row_spans(marked, {(-1, 0): styles.alert}, cross, styles, keep=True)))
    ticks = nice_ticks(lo, hi, max(plot_h // 3, 2)) if yr is not None else []
    tick_rows = {plot_h - 1 - round((t - lo) / (hi - lo) * (plot_h - 1)): t for t in ticks}
    owned = _owners(grids, plot_w, plot_h)
    union = 0
    for _, _, bits in grids:  # (OR'd as big integers: one C pass per layer)
        union |= int.from_bytes(bits, "little")
    dots = union.to_bytes(plot_w * plot_h, "little")
    for row in range(plot_h):
        t = tick_rows.get(row)
        label = _fmt(10.0**t if log else t) if t is not None else ""
        head = _pad(label, GUTTER - 2) + (" ┤" if t is not None else " │")
        a = row * plot_w
        plot = "".join(map(_BRAILLE.__getitem__, dots[a : a + plot_w]))
        spans = _row_spans(owned[row], looks, cross if cross is not None and 0 <= cross < plot_w else None, styles)
        out.append(Text(head + plot, style=styles.axis, no_wrap=True, spans=spans))
    out += _x_axis(x0, x1, plot_w, styles, fmt_x)
    return out


#: a run of cells of one plot row one layer draws: (first, end, the layer's (arm, priority))
Runs = list[tuple[int, int, tuple[int, int]]]


def _owners(grids: Sequence[tuple[int, int, bytes]], width: int, height: int) -> list[Runs]:
    """Per cell row, the runs of cells each layer draws: where layers overlap, a smoothed one over a raw one, then
    the one with more dots in the cell, then the first. Each cell's winner is a C ``max`` over the layers' keys."""
    keyed = [map(_keys(pri, i).__getitem__, bits) for i, (_, pri, bits) in enumerate(grids[:255])]
    best = list(map(max, *keyed)) if len(keyed) > 1 else list(keyed[0]) if keyed else []
    layer = [(arm, pri) for arm, pri, _ in grids]
    rows: list[Runs] = []
    for r in range(height):
        runs: Runs = []
        c = 0
        for code, cells in groupby(best[r * width : (r + 1) * width], key=_LOW.__and__):
            n = len(list(cells))
            if code:
                runs.append((c, c + n, layer[255 - code]))
            c += n
        rows.append(runs)
    return rows


_LOW = 255


@cache
def _keys(pri: int, i: int) -> list[int]:
    """Layer ``i``'s key of a cell by its dot bits (0: no dots): its priority (from -1, a band under every line),
    its dots, then the first layer."""
    return [0, *((((max(pri + 1, 0)) * 9 + d.bit_count()) << 8) | (_LOW - i) for d in range(1, 256))]


#: a braille cell's character by its dot bits (no dots: a space)
_BRAILLE = [" ", *(chr(0x2800 + b) for b in range(1, 256))]


def _row_spans(runs: Runs, looks: dict[tuple[int, int], Style], cross: int | None, styles: Styles,
               keep: bool = False) -> list[Span]:
    """The spans of one plot row (after the gutter): one per run of cells one layer draws, in its look, and the
    crosshair's cell (over its owner's look; ``keep``: a cell with an owner keeps its own look there)."""
    spans = []
    for a, b, who in runs:
        look = looks[who]
        if cross is None or not a <= cross < b:
            spans.append(Span(GUTTER + a, GUTTER + b, look))
            continue
        if a < cross:
            spans.append(Span(GUTTER + a, GUTTER + cross, look))
        spans.append(Span(GUTTER + cross, GUTTER + cross + 1, look if keep else look + styles.cross))
        if cross + 1 < b:
            spans.append(Span(GUTTER + cross + 1, GUTTER + b, look))
    if cross is not None and not any(a <= cross < b for a, b, _ in runs):
        spans.append(Span(GUTTER + cross, GUTTER + cross + 1, styles.cross))
    return spans


def _x_axis(x0: float, x1: float, plot_w: int, styles: Styles, name: str) -> list[Text]:
    """The axis line with tick marks and the labels under them (as many as fit apart), the x's name at the end."""
    axis = [*"─" * plot_w]
    labels = [" "] * plot_w
    free = 0
    for t in nice_ticks(x0, x1, max(plot_w // 12, 2)):
        c = min(round((t - x0) / (x1 - x0) * (plot_w - 1)), plot_w - 1)
        axis[c] = "┬"
        text = _fmt(t)
        start = max(min(c - len(text) // 2, plot_w - len(text)), 0)
        if start >= free:
            labels[start : start + len(text)] = text
            free = start + len(text) + 1
    line = Text(" " * (GUTTER - 1) + "└" + "".join(axis), style=styles.axis, no_wrap=True)
    under = Text(" " * GUTTER + "".join(labels).rstrip(), style=styles.axis, no_wrap=True)
    under.append(f"  ({name})" if len(under) + len(name) + 3 <= GUTTER + plot_w else "", style=styles.axis)
    return [line, under]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e4 and float(v).is_integer() and abs(v) < 1e7:
        return f"{v / 1e3:g}k"
    return fmt_auto(v, 3).strip()


def _pad(s: str, n: int) -> str:
    return s[-n:].rjust(n)
