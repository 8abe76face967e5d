"""Feed: the follower side of the app. It runs in a thread worker, reads the files through steptable.ingest, runs
the alert detectors over new rows, and only posts messages; it never touches a widget.

Coalescing: changed run ids collect in an inbox; one ``RunsChanged`` is in flight at a time and the app takes the
whole inbox when it handles it, so a writer that appends 1000 rows/s costs the UI one refresh per frame it can do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from textual.message import Message

from steptable.alerts import AlertEngine
from steptable.app.messages import AlertsFound, FeedProblem, PreviewReady, RunsChanged
from steptable.app.model import Store

#: files larger than this get a tail preview before their full parse
PREVIEW_MIN_BYTES = 32 * 1024 * 1024
#: bytes read from the end of a big file for the preview
PREVIEW_BYTES = 2 * 1024 * 1024
#: longest the full parse waits for the app to draw the previews
PREVIEW_WAIT = 2.0

Post = Callable[[Message], Any]


class FollowerLike(Protocol):
    @property
    def stores(self) -> Mapping[str, Any]: ...

    def run(self, stop: threading.Event, on_change: Callable[[set[str]], None]) -> None: ...


class Feed:
    """Owns the Follower. ``run`` blocks (call it in a thread worker); ``take`` is for the UI thread."""

    def __init__(
        self,
        paths: list[str],
        poll: float | None = None,
        follower: FollowerLike | None = None,
        preview_min_bytes: int = PREVIEW_MIN_BYTES,
        alerts: bool = True,
    ) -> None:
        self.paths = [str(p) for p in paths]
        self.poll = poll
        self._follower = follower
        self.preview_min_bytes = preview_min_bytes
        self.alerts = alerts
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._posted = False
        self._engines: dict[str, tuple[int, int, AlertEngine]] = {}  # run -> (generation, rows fed, engine)
        self._post: Post = lambda m: None
        #: set by the app once it has drawn the previews (the full parse starts then)
        self.drawn = threading.Event()

    @property
    def follower(self) -> FollowerLike:
        if self._follower is None:
            from steptable.ingest import Follower

            self._follower = Follower(self.paths, poll=self.poll)
        return self._follower

    @property
    def stores(self) -> dict[str, Store]:
        """A snapshot of the follower's runs (a copy: the follower thread may add runs meanwhile)."""
        return dict(self.follower.stores)

    # ------------------------------------------------------------------------------------------ worker thread

    def run(self, stop: threading.Event, post: Post) -> None:
        self._post = post
        try:
            follower = self.follower
            self._preview(stop)
            follower.run(stop, self._changed)
        except Exception as e:  # the UI shows it; the thread must not die silently
            post(FeedProblem(f"follower stopped: {type(e).__name__}: {e}"))

    def _preview(self, stop: threading.Event) -> None:
        """Parse the tail of each big metrics file first, so its newest rows show before the whole file is read.

        The full parse then waits (at most ``PREVIEW_WAIT`` s) for the app to draw the previews: both share the GIL,
        and a first frame that competes with a 1 GB parse comes late.
        """
        if self.preview_min_bytes <= 0:
            return
        from steptable.ingest import discover, preview_tail

        shown = 0
        for cand in discover(self.paths):
            if stop.is_set():
                return
            try:
                size = cand.path.stat().st_size
            except OSError:
                continue
            if cand.kind == "trainer_state" or size < self.preview_min_bytes:
                continue
            store = preview_tail(cand.path, PREVIEW_BYTES, cand.kind)
            store.arm = cand.arm
            store.side_files = cand.side_files
            gb = size >= 1e9
            note = f"last {len(store):,} rows of {size / 1e9:.2g} GB" if gb else \
                f"last {len(store):,} rows of {size / 1e6:.0f} MB"
            self.drawn.clear()
            self._post(PreviewReady(cand.run_id, store, note))
            shown += 1
        if shown:
            self.drawn.wait(PREVIEW_WAIT)

    def _changed(self, ids: set[str]) -> None:
        with self._lock:
            self._pending |= ids
            post = not self._posted
            self._posted = True
        if post:
            self._post(RunsChanged())
        if self.alerts:
            stores = self.follower.stores
            for rid in ids:
                store = stores.get(rid)
                if store is not None:
                    found = self._scan(rid, store)
                    if found:
                        self._post(AlertsFound(rid, found))

    def _scan(self, rid: str, store: Any) -> list[Any]:
        """Feed the rows added since the last call to this run's alert engine (from the top after a reset)."""
        gen = int(getattr(store, "generation", 0))
        prev = self._engines.get(rid)
        if prev is None or prev[0] != gen:
            prev = (gen, 0, AlertEngine())
        _, fed, eng = prev
        with store.lock:
            n = len(store)
            if n <= fed:
                self._engines[rid] = (gen, n, eng)
                return []
            wanted = {k for keys in eng.roles.values() for k in keys}
            cols = [(k, store.column(k)) for k in store.keys if k in wanted]
            steps = store.steps
            walls = store.wall_times
        out = []
        value = store.value
        for i in range(fed, n):
            row = {}
            for k, c in cols:
                v = c[i]
                # Numeric columns pad absent cells with NaN; only a NaN cell asks the store whether it is absent
                # (a sparse eval column) or a logged NaN (which the non-finite detector must see).
                if v is None or (v != v and value(i, k) is None):
                    continue
                row[k] = v
            out.extend(eng.update(int(steps[i]), row, walls[i] if i < len(walls) else None))
        self._engines[rid] = (gen, n, eng)
        return out

    # ------------------------------------------------------------------------------------------ UI thread

    def take(self) -> set[str]:
        """The run ids changed since the last call (the UI calls this when it handles RunsChanged)."""
        with self._lock:
            ids, self._pending = self._pending, set()
            self._posted = False
        return ids

