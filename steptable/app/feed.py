"""Feed: the follower side of the app. It runs in its own thread, reads the files through steptable.ingest, runs
the alert detectors over new rows (in a second thread: steptable.app.alerting), and only posts messages; it never
touches a widget.

Coalescing: changed run ids collect in an inbox; one ``RunsChanged`` is in flight at a time and the app takes the
whole inbox when it handles it, so a writer that appends 1000 rows/s costs the UI one refresh per frame it can do.
"""

from __future__ import annotations

import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from itertools import chain, islice
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message

from steptable.app import heap
from steptable.app.alerting import AlertScanner
from steptable.app.messages import FeedProblem, PreviewReady, RunsChanged
from steptable.app.model import Store
from steptable.table.formatting import sanitize

#: files larger than this get a tail preview before their full parse
PREVIEW_MIN_BYTES = 32 * 1024 * 1024
#: bytes read from the end of a big file for the preview
PREVIEW_BYTES = 256 * 1024
#: most rows of a JSONL preview: more than a terminal shows (the first frame's layout and draw cost per row)
PREVIEW_ROWS = 100
#: longest the full parse waits for the app to draw the previews
PREVIEW_WAIT = 2.0
#: longest the app's first frame waits for the read-ahead, to be drawn with the previews in it
FIRST_FRAME_WAIT = 0.25
#: how the follower words a reader's exception on one file (it goes on with the others)
INTERNAL_ERROR = ": internal error ("
#: distinct internal errors told at most (one that names a changing value must not bury the screen in notices)
MAX_TOLD = 5
#: more runs than this under the paths: the run list is the home screen and runs are read when opened from it
SWEEP_MIN = 8

Post = Callable[[Message], Any]


def _read_replaced(store: Any, start: int, budget: int) -> tuple[list[Any], int]:
    """steptable.alerts.replaced.read_replaced, imported at a run's first resume: the alert engine's import (~8 ms)
    is not the read-ahead's, which the first frame waits for."""
    from steptable.alerts.replaced import read_replaced

    return read_replaced(store, start, budget)


class FollowerLike(Protocol):
    @property
    def stores(self) -> Mapping[str, Any]: ...

    def run(self, stop: threading.Event, on_change: Callable[[set[str]], None]) -> None: ...

    def scan(self) -> set[str]: ...


class Feed:
    """Owns the Follower. ``run`` blocks (call it in its own thread); ``take`` is for the UI thread."""

    def __init__(
        self,
        paths: list[str],
        poll: float | None = None,
        follower: FollowerLike | None = None,
        preview_min_bytes: int = PREVIEW_MIN_BYTES,
        alerts: bool = True,
        sweep_min: int = SWEEP_MIN,
    ) -> None:
        self.paths = [str(p) for p in paths]
        self.poll = poll
        self._follower = follower
        self.preview_min_bytes = preview_min_bytes
        self.alerts = alerts
        self._lock = threading.Lock()
        self._building = threading.Lock()
        self._telling = threading.Lock()
        self._pending: set[str] = set()
        self._posted = False
        self._post: Post = lambda m: None
        self.scanner = AlertScanner(lambda: self.follower.stores, lambda m: self._post(m))
        #: set by the app once it has drawn the previews (the full parse starts then)
        self.drawn = threading.Event()
        self._prepared: queue.SimpleQueue[Message | None] | None = None
        self._taken = 0  # previews the app took itself for its first frame (``first_messages``)
        self._error_count = 0
        self._own_problem = ""
        self._errors_seen = 0  # the follower's error count when its errors were last looked through
        self._told: set[str] = set()
        self.sweep_min = sweep_min
        self.sweep: Any = None  # a SweepIndex (steptable.app.sweep) when the paths hold a sweep
        self._opened: set[str] = set()
        # the heap is frozen (steptable.app.heap) at the UI's take after the one that gave it the first rows read:
        # its tables of them are made by then
        self._heap = "idle"  # -> "empty" (run began) -> "read" (rows came) -> "shown" (taken once) -> "settled"
        # -> "over" (run ended): a Feed whose ``run`` never ran never freezes

    @property
    def follower(self) -> FollowerLike:
        """The Follower, built on first use: once, though the read-ahead thread and ``run``'s thread both ask at start
        (the sweep's settings and the runs followed must be those of one follower)."""
        if self._follower is None:
            with self._building:
                if self._follower is None:
                    from steptable.ingest import Follower

                    self._follower = Follower(self.paths, poll=self.poll, on_resume=_read_replaced)
        return self._follower

    @property
    def stores(self) -> dict[str, Store]:
        """A snapshot of the follower's runs (a copy: the follower thread may add runs meanwhile)."""
        return dict(self.follower.stores)

    # ------------------------------------------------------------------------------------------ worker thread

    def run(self, stop: threading.Event, post: Post) -> None:
        def send(message: Message) -> None:
            try:
                post(message)
            except RuntimeError:  # the app's event loop is closed: it is exiting
                stop.set()

        self._post = send
        with self._lock:
            self._heap = "empty" if self._heap == "idle" else self._heap
        self.scanner = AlertScanner(lambda: self.follower.stores, send)
        if self.alerts:
            threading.Thread(target=self.scanner.run, args=(stop,), name="steptable-alerts", daemon=True).start()
        try:
            follower = self.follower
            self._preview(stop)
            follower.run(stop, self._changed)
        except Exception as e:  # the UI shows it; the thread must not die silently
            send(FeedProblem(f"follower stopped: {type(e).__name__}: {e}"))
        finally:
            with self._lock:  # (the UI's take freezes under this lock: a thaw here comes after that freeze)
                if self._heap == "settled":
                    heap.release()
                self._heap = "over"

    def prepare(self) -> None:
        """Start reading ahead (a thread) before the app runs: import ingest, find the runs, parse the tails of the
        big files. It overlaps Textual's own start-up; ``run`` posts the previews as they come."""
        if self._prepared is None:
            self._prepared = queue.SimpleQueue()
            threading.Thread(target=self._read_ahead, args=(self._prepared,), name="steptable-preview",
                             daemon=True).start()

    def first_messages(self, wait: float = FIRST_FRAME_WAIT) -> list[Message]:
        """What the read-ahead (``prepare``, if it was called) has to say, waiting for it to finish for at most
        ``wait`` s: the app builds its first frame with the previews in it, instead of a frame without runs, then
        another with them one message later. What this returns ``run`` does not post."""
        if self._prepared is None:
            return []
        out: list[Message] = []
        end = time.monotonic() + wait
        while (left := end - time.monotonic()) > 0:
            try:
                message = self._prepared.get(timeout=left)
            except queue.Empty:
                break
            if message is None:
                self._prepared.put(None)  # (``_preview`` stops on it)
                break
            out.append(message)
        self._taken += sum(isinstance(m, PreviewReady) for m in out)
        return out

    def _read_ahead(self, out: queue.SimpleQueue[Message | None]) -> None:
        try:
            from steptable.ingest import discover, preview_tail
            from steptable.ingest.files.sniff import sniff_jsonl

            self.follower  # noqa: B018  (builds the Follower here, off the UI thread)
            found = iter(discover(self.paths))
            # no more candidates than that, no more runs: not a sweep, and no index (its imports) to build
            cands = list(islice(found, self.sweep_min + 1)) if self.sweep_min > 0 else []
            if len(cands) > self.sweep_min and self._sweep_found(out):
                return
            if self.preview_min_bytes > 0:
                for cand in chain(cands, found):
                    try:
                        size = cand.path.stat().st_size
                        if cand.kind == "trainer_state" or size < self.preview_min_bytes:
                            continue
                        # only what the follower will show: a JSONL its name does not vouch for must hold metric
                        # rows (a 40 MB prompts.jsonl does not), a console log a metrics line in its window
                        if cand.kind == "jsonl" and not cand.confirmed and not sniff_jsonl(cand.path):
                            continue
                        rows = max(PREVIEW_ROWS, shutil.get_terminal_size().lines) if cand.kind == "jsonl" else None
                        store = preview_tail(cand.path, PREVIEW_BYTES, cand.kind, rows)
                    except OSError:  # unreadable: the follower reports it; the preview just does without it
                        continue
                    except Exception as e:  # one file's preview failing keeps neither the others nor the read back
                        out.put(FeedProblem(f"preview of {cand.run_id} failed: {type(e).__name__}: {e}",
                                            lasting=False))
                        continue
                    if not len(store):
                        continue
                    if store.meta.get("arms", 0) > 1:
                        continue  # several arms' StepLoggers share the file: their runs come with the full read

                    store.arm = cand.arm
                    store.side_files = cand.side_files
                    gb = size >= 1e9
                    note = f"last {len(store):,} rows of {size / 1e9:.2g} GB" if gb else \
                        f"last {len(store):,} rows of {size / 1e6:.0f} MB"
                    out.put(PreviewReady(cand.run_id, store, note))
        except Exception as e:  # (not to stderr, under the app): the follower finds and reads the runs anyway
            out.put(FeedProblem(f"reading ahead stopped: {type(e).__name__}: {e}", lasting=False))
        finally:
            out.put(None)

    def _sweep_found(self, out: queue.SimpleQueue[Message | None]) -> bool:
        """More than ``sweep_min`` runs: follow only the runs opened from the list (``open``), index the rest."""
        if self.sweep_min <= 0 or self._follower is None or not hasattr(self._follower, "want") \
                or not hasattr(self._follower, "passed_over"):
            return False
        from steptable.app.sweep import SweepFound, SweepIndex

        sweep = SweepIndex(self.paths)
        found = sweep.discover()
        if found <= self.sweep_min:
            return False
        self._follower.want = lambda cand: cand.run_id in self._opened
        self._follower.passed_over = sweep.poke
        self.sweep = sweep
        out.put(SweepFound(found))
        return True

    def open(self, run_ids: Iterable[str], where: Iterable[Path] = ()) -> None:
        """Follow these runs of a sweep too (their whole files are read now, in a thread of their own); ``where``:
        the directories that hold them (looked through alone, not every run's), else a full discovery."""
        self._opened.update(run_ids)
        follower = self.follower
        dirs = set(where)
        on_events = getattr(follower, "on_events", None)

        def scan() -> None:
            try:
                self._changed(on_events(dirs) if dirs and on_events is not None else follower.scan())
            except Exception as e:  # the UI shows it; the thread must not die silently
                self._post(FeedProblem(f"reading the runs opened failed: {type(e).__name__}: {e}", lasting=False))

        threading.Thread(target=scan, name="steptable-open", daemon=True).start()

    def _preview(self, stop: threading.Event) -> None:
        """Post the tails of the big metrics files, so their newest rows show before the whole files are read.

        The full parse then waits (at most ``PREVIEW_WAIT`` s) for the app to draw the previews: both share the GIL,
        and a first frame that competes with a 1 GB parse comes late.
        """
        self.prepare()
        assert self._prepared is not None
        shown = self._taken
        while not stop.is_set():
            message = self._prepared.get()
            if message is None:
                break
            self.drawn.clear()
            self._post(message)
            shown += isinstance(message, PreviewReady)
        if self.sweep is not None:
            threading.Thread(target=self.sweep.run, args=(stop, self._post), name="steptable-index",
                             daemon=True).start()
        elif shown:
            self.drawn.wait(PREVIEW_WAIT)

    def _changed(self, ids: set[str]) -> None:
        self._tell_internal_errors()
        with self._lock:
            self._pending |= ids
            post = not self._posted
            self._posted = True
            if self._heap == "empty":
                self._heap = "read"
        if post:
            self._post(RunsChanged())
        if self.alerts:
            self.scanner.changed(ids)

    def _tell_internal_errors(self) -> None:
        """A reader that raised on a file is only an entry in the follower's errors, and its run looks stalled: each
        distinct one is posted as a problem. (A poll that raised reports its runs changed, so this runs after it.)
        The follower's thread and a thread reading runs opened from a sweep's list both come here."""
        after = getattr(self._follower, "errors_after", None)
        if after is None:
            return
        with self._telling:
            count, new = after(self._errors_seen)
            self._errors_seen = count
            for e in new:
                text = sanitize(str(e)[:500])
                if INTERNAL_ERROR in text and text not in self._told and len(self._told) < MAX_TOLD:
                    self._told.add(text)
                    self._post(FeedProblem(text, lasting=False))

    # ------------------------------------------------------------------------------------------ UI thread

    def note(self) -> str:
        """One line about the follower itself: its mode and its latest own problem (not a bad line of a run)."""
        f = self._follower
        if f is None:  # (not built yet: building it here would import ingest on the UI thread)
            return ""
        if self.sweep is not None:
            stores = f.stores
            reading = sum(1 for rid in list(self._opened) if rid not in stores)  # (the follower's thread adds them)
            more = f", {reading} being read" if reading else ""
            return f"{self.sweep.line(time.time())} · {len(stores)} open{more} (r: the run list)"
        mode = str(getattr(f, "mode", "") or "")
        count = int(getattr(f, "error_count", 0) or 0)
        if count != self._error_count:
            self._error_count = count
            own = [e for e in getattr(f, "errors", []) if str(e).startswith("steptable:")]
            self._own_problem = str(own[-1]) if own else ""
        runs = len(f.stores)
        text = f"{runs} run{'s' if runs != 1 else ''}" + (f" · {mode}" if mode and mode != "idle" else "")
        return f"{text} · {self._own_problem}" if self._own_problem else text

    def take(self) -> set[str]:
        """The run ids changed since the last call (the UI calls this when it handles RunsChanged)."""
        with self._lock:
            ids, self._pending = self._pending, set()
            self._posted = False
            if self._heap == "shown":  # (under the lock: ``run`` ending now thaws after this, not before)
                heap.settle()
            self._heap = {"read": "shown", "shown": "settled"}.get(self._heap, self._heap)
        return ids

