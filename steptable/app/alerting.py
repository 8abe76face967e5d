"""AlertScanner: runs steptable.alerts.engine over the rows each run gains, in its own thread, a chunk at a time.

Its own thread so that the follower keeps reading files while a long history is scanned (a few microseconds a quiet
row, tens where detectors work: seconds of a million-row run), and chunks with a short sleep between them so that the UI
thread gets the GIL while that happens; while the user acts (a key, a click: :meth:`AlertScanner.defer`) it waits
between chunks, so that the UI's work is not shared with it. Found alerts are posted per chunk; the scanner never
touches a widget.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message

from steptable.app.messages import AlertsFound, FeedProblem

if TYPE_CHECKING:
    from steptable.alerts.engine import Alert, AlertEngine

#: rows fed to the detectors between two pauses (a few milliseconds of work)
CHUNK = 250
#: the pause (seconds): the GIL goes to the UI thread meanwhile
PAUSE = 0.002
#: how long the scanner keeps off the GIL after a key or a click (seconds)
QUIET = 0.3


class AlertScanner:
    def __init__(self, stores: Callable[[], Mapping[str, Any]], post: Callable[[Message], Any]) -> None:
        self._stores = stores
        self._post = post
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._wake = threading.Event()
        #: set while nothing is waiting to be scanned (tests and benchmarks wait on it)
        self.idle = threading.Event()
        self.idle.set()
        self._engines: dict[str, _Fed] = {}
        self._quiet_until = 0.0  # time.monotonic() until which the user is acting
        self._failed: set[str] = set()  # runs whose scan failed (told once each)

    def defer(self, seconds: float = QUIET) -> None:
        """The user acts (any thread): the scan waits between chunks until ``seconds`` from now (a history of 700k rows
        takes tens of seconds of CPU; shared with it, a key's redraw would take twice as long or more)."""
        self._quiet_until = time.monotonic() + seconds

    def _wait_quiet(self, stop: threading.Event) -> None:
        while (left := self._quiet_until - time.monotonic()) > 0 and not stop.is_set():
            stop.wait(min(left, 0.05))  # (a shorter defer may follow)

    def changed(self, ids: set[str]) -> None:
        """Runs that gained rows (any thread)."""
        with self._lock:
            self._pending |= ids
            self.idle.clear()
        self._wake.set()

    def run(self, stop: threading.Event) -> None:
        """Scan until ``stop`` (blocking: its own thread)."""
        while not stop.is_set():
            self._wake.wait(0.5)
            with self._lock:
                self._wake.clear()
                ids, self._pending = self._pending, set()
            stores = self._stores()
            for rid in sorted(ids):
                store = stores.get(rid)
                if store is not None:
                    self._scan_or_report(rid, store, stop)
                else:  # no longer followed (its file gone): its engine goes too (a long sweep's would pile up)
                    self._engines.pop(rid, None)
            with self._lock:
                if not self._pending:
                    self.idle.set()

    def _scan_or_report(self, rid: str, store: Any, stop: threading.Event) -> None:
        """``scan``; a failure on one run is told (once a run) and its engine dropped, so that its next rows start it
        over; the thread goes on with the other runs (dead, it would leave "no alerts" on screen for the session)."""
        try:
            self.scan(rid, store, stop)
        except Exception as e:  # a bug of ours (a detector, a store) on this run's rows
            self._engines.pop(rid, None)
            if rid not in self._failed:
                self._failed.add(rid)
                why = f"{type(e).__name__}: {e}"[:300]
                self._post(FeedProblem(f"alert scan of {rid} failed ({why}); its alerts may be incomplete",
                                       lasting=False))

    def scan(self, rid: str, store: Any, stop: threading.Event | None = None) -> list[Alert]:
        """Feed the rows added since the last call to this run's engine (from the top after a reset, from the
        earliest resume point after resumes; cells merged into rows already fed, and rows inserted among them, are
        fed too); returns and posts what they raise."""
        from steptable.alerts.engine import AlertEngine
        from steptable.alerts.history import feed_columns, resumed_engine

        gen = int(getattr(store, "generation", 0))
        fed = self._engines.get(rid)
        if fed is None or fed.generation != gen:
            fed = _Fed(gen, AlertEngine())
        eng = fed.engine
        wanted = eng.config.watched()
        redo: dict[int, tuple[dict[str, Any], frozenset[str] | None]] = {}
        with store.lock:
            n = len(store)
            resumes = list(getattr(store, "resumes", ()))
            last = fed.last
            # rows a resume replaced before the engine read them (the app opened after a restart): their alerts
            replaced = list(getattr(store, "replaced", ())[fed.replaced:])
            missed = [a for a in replaced if last is None or a.step > last]
            fed.replaced += len(replaced)
            missed += self._earlier(fed, store)
            if last is not None and len(resumes) > fed.resumes:  # rows from the earliest new resume step on are new
                at = min(resumes[fed.resumes :])
                last = min(last, at - 1)
                # what the engine read from there was replaced: one that read the rows held now, up to the resume
                fed.engine = eng = resumed_engine(store, at, old=eng)
            if last is not None and fed.version >= 0:
                lost = store.lost_since(fed.version)
                if lost is not None:  # more edits than the store lists: the rows from there are fed again
                    last = min(last, lost - 1)
                redo = store.rows_edited(fed.version, last)  # (later rows are fed with the new rows below)
            fed.resumes, fed.version = len(resumes), int(getattr(store, "version", 0))
            self._engines[rid] = fed
            start = 0 if last is None else store.index_of_step(last + 1)
            fed.last = last
            ended = self._end(fed, store, n)
            if n <= start and not redo:
                if missed:
                    self._post(AlertsFound(rid, missed))
                return [*missed, *self._say_end(rid, fed, ended)]
            # only the rows to feed: copying whole columns for every new row would cost O(rows) a row
            steps = store.steps_between(start, n)
            cols = [(k, store.column_between(k, start, n)) for k in store.keys if k in wanted]
            walls = store.wall_times_between(start, n)
        out: list[Alert] = list(missed)
        if missed:
            self._post(AlertsFound(rid, missed))
        for step in sorted(redo):  # what changed in rows already fed: the cells merged in, or the inserted row
            row, keys = redo[step]
            out.extend(eng.update(step, {k: v for k, v in row.items() if k in wanted and (keys is None or k in keys)}))
        if out:
            self._post(AlertsFound(rid, list(out)))
        for begin in range(start, n, CHUNK):
            stop_at = min(begin + CHUNK, n)
            try:
                found = feed_columns(eng, store, cols, steps, walls, begin, stop_at, start)
            except IndexError:  # truncated meanwhile (a restart rewrote the file): start over on the next change
                self._engines.pop(rid, None)
                return out
            fed.last = steps[stop_at - 1 - start]
            if found:
                out.extend(found)
                self._post(AlertsFound(rid, found))
            if stop is not None and stop_at < n:
                self._wait_quiet(stop)
                if stop.wait(PAUSE):
                    return out  # (quitting: the rows left, and how the run ended, are not said)
        return out + self._say_end(rid, fed, ended)

    def _end(self, fed: _Fed, store: Any, n: int) -> tuple[Alert, float] | None:
        """How the run's StepLogger block ended, when not normally (alerts.end_alert), at the last step, and the
        close it is for; None when not, or already said for this close. The store's lock is held."""
        from steptable.alerts.engine import end_alert
        from steptable.table.runinfo import closed_at

        meta = getattr(store, "meta", None)
        info = meta.get("runinfo") if isinstance(meta, dict) else None
        closed = closed_at(info)
        if not n or closed is None or closed in fed.closes:
            return None
        alert = end_alert(info, int(store.steps_between(n - 1, n)[0]))
        return None if alert is None else (alert, closed)

    @staticmethod
    def _earlier(fed: _Fed, store: Any) -> list[Alert]:
        """How the processes before the run's resumes ended (alerts.earlier_end_alerts), those not said yet. The
        store's lock is held."""
        from steptable.alerts.engine import earlier_end_alerts

        meta = getattr(store, "meta", None)
        new = [a for a in earlier_end_alerts(meta.get("runinfo") if isinstance(meta, dict) else None, fed.closes)
               if (a.step, a.message) not in fed.earlier]
        fed.earlier.update((a.step, a.message) for a in new)
        return new

    def _say_end(self, rid: str, fed: _Fed, ended: tuple[Alert, float] | None) -> list[Alert]:
        """Post the end alert once a close, after the rows' alerts (it is the run's last event, and the status bar
        lists the latest first), as summary and ``tail --alerts-only`` say it. It is posted with the close
        it is for, so that a resumed run that dies again at the same step is told again."""
        if ended is None:
            return []
        alert, closed = ended
        fed.closes.add(closed)  # (told as it happened: not again as an earlier end once the run resumes)
        self._post(AlertsFound(rid, [alert], closed=closed))
        return [alert]


@dataclass
class _Fed:
    """What a run's engine has seen: the file's generation, the last step fed, the resumes so far and the store
    version (for the edits after it)."""

    generation: int
    engine: AlertEngine
    last: int | None = None
    resumes: int = 0
    version: int = -1
    replaced: int = 0  # the store's alerts of replaced rows looked at so far (RunStore.replaced)
    earlier: set[tuple[int, str]] = field(default_factory=set)  # the earlier processes' ends said (step, message)
    # the closes whose end alert was said (a resumed run that dies again: a new close, said again)
    closes: set[float] = field(default_factory=set)
