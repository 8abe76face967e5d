"""The chart's data feed: per (run, key, x axis) a min/max pyramid of the values, a smoothed one made on demand, and
the x of each row (``steptable.compare.xaxis``), all extended by the rows a run appended since, so that a live
run's chart costs the new rows, not the series. A rewritten file, a resume or a row changed in place builds them
again from the store. A build of many rows (the first one of a long run) can go to a thread of its own, so that the
screen asking for it keeps taking keys: the series is then not handed out until it is built."""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from steptable.app.model import Store, change_mark
from steptable.compare.xaxis import XAxis, XError, XRun, x_values
from steptable.ingest.pyramid import Pyramid
from steptable.table.formatting import to_float

#: the smoothing weight (TensorBoard's default): each row's smoothed value keeps this much of the one before
EMA_WEIGHT = 0.9


@dataclass
class Series:
    """One run's column on one x axis, kept up to date by :meth:`update`."""

    store: Store
    key: str
    x_name: str
    x: XAxis | None = None
    raw: Pyramid = field(default_factory=Pyramid)
    smooth: Pyramid | None = None
    _ema: float = math.nan
    _mark: tuple[int, int, int] | None = None
    building: bool = False  # a thread is building it: not to be read or updated until it ends
    failed: Exception | None = None  # what the last build in a thread raised (an x axis the run lacks)

    def pending(self, rows: int, smooth: bool = False) -> int:
        """How many rows :meth:`update` would read for ``rows`` (all of them when it would build again)."""
        fresh = change_mark(self.store) != self._mark or rows < len(self.raw)
        new = rows if fresh else rows - len(self.raw)
        return new + (min(rows, len(self.raw)) if smooth and self.smooth is None and not fresh else 0)

    def update(self, rows: int, smooth: bool = False) -> None:
        """Take rows up to ``rows``: only the new ones unless the store changed beyond appends. Raises
        ``steptable.compare.XError`` when the run has no such x axis."""
        mark = change_mark(self.store)
        if mark != self._mark or rows < len(self.raw) or self.x is None:
            self._mark = None  # (until the x axis is read: a run without it raises again on every call)
            self.x = x_values(cast(XRun, self.store), self.x_name)
            self._mark = mark
            self.raw = Pyramid()
            self.smooth = None
            self._ema = math.nan
        elif self.x is not None and len(self.x.values) < rows:
            self.x.extend(cast(XRun, self.store))
        start = len(self.raw)
        if rows > start:
            new = self.store.cells_between(self.key, start, rows)
            self.raw.extend(new)
            if self.smooth is not None:
                self.smooth.extend(self._smoothed(new))
        if smooth and self.smooth is None:
            self._ema = math.nan
            self.smooth = Pyramid(self._smoothed(self.store.cells_between(self.key, 0, len(self.raw))))

    def _smoothed(self, values: Sequence[Any]) -> list[float | None]:
        """The exponential moving average of the finite values (absent rows stay absent; NaN / inf are skipped)."""
        out: list[float | None] = []
        ema, w = self._ema, EMA_WEIGHT
        for v in values:
            if v is None:
                out.append(None)
                continue
            x = v if type(v) is float else to_float(v)
            if x - x == 0.0:
                ema = x if ema != ema else w * ema + (1 - w) * x
            out.append(ema if ema == ema else None)
        self._ema = ema
        return out

    @property
    def xs(self) -> array[float]:
        return self.x.values if self.x is not None else array("d")


#: a build of more rows than this goes to a thread of its own when the Feeds have a ``built`` callback
BACKGROUND_ROWS = 20_000


class Feeds:
    """The Series of every (run, key, x axis) charted so far, dropped with their run's store. ``built``: called from
    a building thread when a series it built is ready; with it, :meth:`ready` builds more than ``background`` rows
    (default BACKGROUND_ROWS) in that thread."""

    def __init__(self, built: Callable[[], None] | None = None, background: int | None = None) -> None:
        self.items: dict[tuple[int, str, str], Series] = {}
        self.built = built
        self.background = BACKGROUND_ROWS if background is None else background

    def get(self, store: Store, key: str, x_name: str, rows: int, smooth: bool = False) -> Series:
        """The series brought up to ``rows``, built in the caller's thread. Raises ``steptable.compare.XError``
        when the run has no such x axis."""
        s = self._series(store, key, x_name)
        s.update(min(rows, len(store)), smooth)
        return s

    def _series(self, store: Store, key: str, x_name: str) -> Series:
        k = (id(store), key, x_name)
        s = self.items.get(k)
        if s is None or s.store is not store:
            s = self.items[k] = Series(store, key, x_name)
        return s

    def ready(self, store: Store, key: str, x_name: str, rows: int, smooth: bool = False) -> Series | None:
        """As :meth:`get`, but a build of more than ``background`` rows goes to a thread (with a ``built``
        callback): None until it is done."""
        s = self._series(store, key, x_name)
        if s.building:
            return None
        rows = min(rows, len(store))
        if s.failed is not None and s._mark == change_mark(store):
            raise s.failed
        s.failed = None
        if self.built is not None and s.pending(rows, smooth) > self.background:
            s.building = True
            threading.Thread(target=self._build, args=(s, rows, smooth), name="steptable-chart-build",
                             daemon=True).start()
            return None
        s.update(rows, smooth)
        return s

    def _build(self, s: Series, rows: int, smooth: bool) -> None:
        try:
            s.update(rows, smooth)
        except XError as e:  # an x axis the run lacks: raised by the next ready(), until the run changes
            s.failed = e
            s._mark = change_mark(s.store)
        except Exception:  # (a store emptied by a rewrite meanwhile): built again by the next ready()
            s._mark = None
        finally:
            s.building = False
        if self.built is not None:
            self.built()

    def keep(self, stores: Sequence[Store]) -> None:
        live = {id(s) for s in stores}
        for k in [k for k in self.items if k[0] not in live]:
            del self.items[k]
