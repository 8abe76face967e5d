"""Follower: keep the RunStores of every run under some paths up to date (watchfiles, with stat polling as fallback).

Use ``scan()`` for one synchronous pass (discover, read everything new), or ``run(stop, on_change)`` in a worker
thread: notification through ``watchfiles`` (debounced to ``DEBOUNCE_MS``), a stat of every followed file after
``IDLE_POLL`` seconds without events and a full re-check (discovery included) every ``recheck`` seconds even then
(network filesystems drop events; rotations of a file root; events before the watch began), and stat polling every
``poll`` seconds when asked for (``poll=0.5``) or when notification is unavailable or fails. A run whose file is gone
(``GONE_AFTER``) is no longer followed: it leaves ``stores``, and polls cost what the runs on disk cost.

Threads: the follower thread is the only writer. ``stores`` is replaced, never mutated (copy on write), so a reader
can iterate the dict it got; each store follows the rules in :mod:`steptable.ingest.store` (per-batch lock,
``version``). ``on_change`` is called on the follower thread with the ids of the runs that changed: post a message
from it, do not draw. ``scan()`` and ``run()`` may be called from different threads; passes never overlap.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from steptable.ingest.files.beside import COPY_KINDS
from steptable.ingest.files.discover import Candidate, discover, discover_at
from steptable.ingest.files.rejected import Rejected
from steptable.ingest.files.reports import Reports
from steptable.ingest.files.sniff import sniff_jsonl
from steptable.ingest.files.tail import MAX_LINE
from steptable.ingest.joined import Joiner
from steptable.ingest.parse import BadLine
from steptable.ingest.readers.tbcurves import DEPTH as CURVE_DEPTH
from steptable.ingest.replacedrows import ResumeReader
from steptable.ingest.sidefiles import load_meta
from steptable.ingest.source import Source, make_source
from steptable.ingest.store import RunStore

#: a full re-check waits at least this many times as long as the last discovery pass took
RECHECK_SHARE = 20
#: ... and never more than this many seconds (a new run on a filesystem without notifications waits that long)
RECHECK_MAX = 30.0
#: chunks one poll of a file skips for a bug of ours (each read past) before the rest waits for the next poll
MAX_SKIPS = 16
#: a file missing this many seconds and polls (a paused follower's one late look is no while) is no longer followed:
#: long enough for a rotation, a restarted run or a network filesystem's hiccup to bring it back (within it, the same
#: run read on from where it was: after 10 s, tail -f printed a moved-and-restored file again from its first row).
#: Written later, it is a run again (a reset). A sweep that deletes its runs stops paying for them after it.
GONE_AFTER, GONE_POLLS = 600.0, 3
MAX_RETIRED = 10_000  # runs no longer followed whose generation is remembered for that (the oldest forgotten first)
_WATCHED_SUFFIXES = frozenset({".jsonl", ".json", ".log", ".txt", ".out", ".wandb", ".db"})


class Follower:
    def __init__(self, paths: Iterable[str | Path] | str | Path, poll: float | None = None, recheck: float = 2.0,
                 *, max_line: int = MAX_LINE, on_resume: ResumeReader | None = None,
                 keep: Callable[[str], bool] | None = None) -> None:
        """Follow the runs under ``paths`` (``poll`` seconds between stat polls, None: notifications). ``on_resume``
        reads the rows a resume drops from a store (see RunStore); the alert layer passes its reader of them."""
        self.on_resume = on_resume
        self.keep = keep  # the projection of its runs' stores (RunStore's keep)
        self.roots = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
        self.poll = poll
        self.recheck = recheck
        self._discover_s = 0.0  # how long the last discovery pass took
        self.max_line = max_line
        self._runs: dict[str, RunStore] = {}  # every file's runs; ``stores`` shows them with resumes joined
        self.stores: dict[str, RunStore] = {}
        self._joiner = Joiner()  # (steptable.ingest.joined: a training resumed in a new logger directory is one run)
        self.mode = "idle"  # "notify" | "poll" while run() runs
        #: the problems reported; the sources hold its ``report``, not the follower (a follower dropped is freed
        #: by reference counting, its stores with it)
        self.reports = Reports()
        self._report = self.reports.report
        self._sources: dict[Path, Source] = {}
        self._by_file: dict[str, Source] = {}  # absolute path -> source (watchfiles reports absolute paths)
        self._real: dict[str, Path] = {}  # the real path of each followed file -> its candidate key
        self._rejected = Rejected()  # files judged not a run (steptable.ingest.files.rejected)
        self._unlisted: set[Path] = set()  # directories and files that failed on the last discovery, reported once
        self._failing: set[Path] = set()  # the same, gathered during the pass under way
        self._missing: dict[Path, tuple[float, int]] = {}  # source key -> (when its file was first missed, polls)
        self._retired: dict[str, tuple[int, int]] = {}  # run no longer followed -> (generation, version) of its store
        self._pass = threading.RLock()
        #: which candidates to follow (None: all): a sweep's list follows only the runs opened from it
        self.want: Callable[[Candidate], bool] | None = None
        #: one-shot reads (``summary``): a big JSONL's first read split across two processes where that is safe
        #: and pays (steptable.ingest.splitread; the same rows, bad lines and placements as one process reads)
        self.split = False
        #: told of each candidate ``want`` turned down (a sweep's index learns of new and growing runs from the
        #: follower's file events instead of waiting for its own stat pass)
        self.passed_over: Callable[[Candidate], None] | None = None

    # --- public -----------------------------------------------------------------------------------------------

    @property
    def error_count(self) -> int:
        """How many problems were reported so far."""
        return self.reports.count

    @property
    def errors(self) -> list[str]:
        """Every reported problem so far (the latest ``reports.MAX_ERRORS``), as ``path:line: reason``."""
        return [text for _, text in self.reports.kept]

    def errors_after(self, count: int) -> tuple[int, list[str]]:
        """``error_count`` and the problems reported after the first ``count`` (of the latest kept), read
        together: a pass on another thread (``scan`` while ``run`` follows) may be reporting meanwhile."""
        count, found = self.problems_after(count)
        return count, [text for _, text in found]

    def problems_after(self, count: int) -> tuple[int, list[tuple[str, str]]]:
        """:meth:`errors_after` with the file of each problem: (its path as discovery found it, or ``steptable``
        for the follower's own; the text)."""
        return self.reports.after(count)

    def read_nothing(self) -> bool:
        """Problems were reported and no run holds a row: what the paths hold could not be read (garbage, a
        permission), which a one-shot command must not pass off as an empty run."""
        return bool(self.reports.kept) and not any(len(s) for s in self._runs.values())

    def unreadable(self) -> list[str]:
        """What a one-shot command could not read although it was there: runs without a row that reported problems
        (permission, garbage, not a regular file) and paths that could not be listed. (A follower retries them.)"""
        out = [str(s.path) for s in self._runs.values() if not len(s) and s.bad_count]
        return out + [str(p) for p in sorted(self._unlisted)]

    def scan(self) -> set[str]:
        """Discover runs and read everything new now. Returns the ids of the runs that changed."""
        return self.tick(discover=True)

    def finish(self) -> set[str]:
        """For one-shot reads (``tail`` without ``-f``, ``summary``): also parse each file's unterminated last line,
        which a follower leaves waiting for its newline. Returns the runs that changed."""
        with self._pass:
            changed: set[str] = set()
            for src in list(self._sources.values()):
                finish = getattr(src, "finish", None)
                try:
                    done = finish is not None and finish()
                except Exception as e:  # a bug of ours on one file's last line: the rest of the read still counts
                    self._internal(src, e)
                    continue
                if done:
                    for st in src.stores():
                        changed.add(st.run)
                        self._expose(st)
            return self._publish(changed)

    def run(self, stop: threading.Event, on_change: Callable[[set[str]], None]) -> None:
        """Follow until ``stop`` is set (blocking: call it in a worker thread); see steptable.ingest.files.wake."""
        from steptable.ingest.files.wake import follow

        follow(self, stop, on_change)

    # --- passes -----------------------------------------------------------------------------------------------

    def tick(self, discover: bool, only: Iterable[Source] | None = None) -> set[str]:
        """One pass: discovery first when ``discover``, then a poll of ``only`` (default: every source); returns the
        ids of the runs viewers see changed."""
        with self._pass:
            changed: set[str] = self._discover() if discover else set()
            for src in list(self._sources.values()) if only is None else only:
                if self._poll(src):
                    changed.update(st.run for st in src.stores())
                if src.dead:
                    self._drop(src)
                    continue
                if src.missing:
                    if self._gone(src.cand.key):
                        changed |= self._retire(src)
                        continue
                elif self._missing:
                    self._missing.pop(src.cand.key, None)
                if src.exposed:
                    changed.update(st.run for st in src.stores() if self._expose(st))
            return self._publish(changed)

    def _publish(self, changed: set[str]) -> set[str]:
        """Show the runs read (``stores``), each training resumed in pieces as one; returns ``changed`` (the runs
        read that changed) as the ids shown."""
        shown, piece_of, joined = self._joiner.view(self._runs, changed)
        self.stores = shown if isinstance(shown, dict) else dict(shown)
        return {piece_of.get(r, r) for r in changed if r not in self._joiner.held} | joined

    def _poll(self, src: Source) -> bool:
        """``src.poll()``, True when its runs changed. A bug of ours costs the chunk it failed on (the tail has read
        past it), never the other files nor the rest of this one: a tail that got further is polled again now, for a
        one-shot read has no next poll (``summary`` showed none of a file's rows after a failing chunk). Told once."""
        tail = getattr(src, "tail", None)
        failed = False
        if self.split:  # (imported only here: a follower never splits)
            from steptable.ingest.splitread import first_read
        for _ in range(MAX_SKIPS):
            at = tail.offset if tail is not None else None
            try:
                return (first_read(src) if self.split else src.poll()) or failed
            except Exception as e:
                if not failed:
                    self._internal(src, e)
                failed = True
            if tail is None or tail.offset == at:  # nothing passed: polling again would fail the same way
                break
        return failed

    def _internal(self, src: Source, e: Exception) -> None:
        if isinstance(e, OSError):  # a read of the open file failed (EIO on a network mount): the file's, not ours
            bad = BadLine(str(src.cand.path), 0, f"unreadable ({e.strerror or e})")
            src.stores()[0].add_bad([bad])  # (a run without a row and with this: one a command could not read)
            self._report(bad)
            return
        self._report(BadLine(str(src.cand.path), 0, f"internal error ({type(e).__name__}: {e})"))

    def _expose(self, store: RunStore) -> bool:
        """Show ``store`` in ``stores`` (True if it was not there). The file of a run no longer followed, written
        again: to readers, the run was reset."""
        if store.run in self._runs:
            return False
        old = self._retired.pop(store.run, None)
        if old is not None:
            store.succeed(*old)
        self._runs = {**self._runs, store.run: store}
        return True

    def _gone(self, key: Path) -> bool:
        """One more poll found the file of source ``key`` missing: missing for GONE_AFTER s and GONE_POLLS polls?"""
        now = time.monotonic()
        since, polls = self._missing.get(key, (now, 0))
        self._missing[key] = (since, polls + 1)
        return polls + 1 >= GONE_POLLS and now - since >= GONE_AFTER

    def _retire(self, src: Source) -> set[str]:
        """Stop following ``src`` (its file is gone); its runs leave ``stores``, their stores left as they are for
        the readers that hold them. Returns those runs."""
        self._forget(src)
        gone = {st.run: st for st in src.stores() if self._runs.get(st.run) is st}
        self._runs = {k: v for k, v in self._runs.items() if k not in gone}
        for run, st in gone.items():
            with st.lock:
                self._retired[run] = (st.generation, st.version)
            if len(self._retired) > MAX_RETIRED:
                del self._retired[next(iter(self._retired))]
        return set(gone)

    def recheck_due(self, since: float) -> bool:
        """A full re-check every ``recheck`` seconds, or, where a discovery pass is costly (a tree of many thousand
        files), rarely enough that passes take at most 1/``RECHECK_SHARE`` of the time (up to ``RECHECK_MAX``)."""
        wait = min(max(self.recheck, RECHECK_SHARE * self._discover_s), RECHECK_MAX)
        return time.monotonic() - since >= wait

    def _discover(self) -> set[str]:
        """A discovery pass; the runs it retired."""
        t0 = time.monotonic()
        try:
            return self._discover_pass()
        finally:
            self._discover_s = time.monotonic() - t0

    def _discover_pass(self) -> set[str]:
        self._failing = set()
        self._rejected.start_pass()
        found: set[Path] = set()
        for cand in discover(self.roots, self._unreadable, self._rejected.settled):
            found.add(cand.key)
            src = self._sources.get(cand.key)
            if src is not None:
                src.store.side_files = cand.side_files
                if "config" in cand.side_files and not {"config", "config_refused"} & src.store.meta.keys():
                    load_meta(src.store, cand)  # a config.json written after the run started
                continue
            self._add(cand)
        self._unlisted = self._failing  # what reads again is reported again if it fails later
        retired: set[str] = set()
        if not self._failing:  # files judged not a run that are gone now (a whole pass met the rest)
            self._rejected.end_pass()
            # a followed copy of a run that discovery now passes over, its better file having appeared beside it (an
            # HF output directory's TensorBoard events once steptable's callback wrote its metrics.jsonl): retired
            for key, src in list(self._sources.items()):
                if src.cand.kind in COPY_KINDS and key not in found and os.path.exists(key):
                    retired |= self._retire(src)
        return retired

    def _unreadable(self, path: Path, e: OSError) -> None:
        """A directory discovery could not list or a file it could not sniff: reported once while it keeps failing."""
        if path not in self._unlisted:
            self._unlisted.add(path)
            self._report(BadLine(str(path), 0, f"unreadable ({e.strerror or e}); skipped"))
        self._failing.add(path)

    def _add(self, cand: Candidate) -> None:
        if self.want is not None and not self.want(cand):
            if self.passed_over is not None:
                self.passed_over(cand)
            return
        if not cand.confirmed and self._rejected.still(cand.path):
            return
        if cand.kind == "jsonl" and not cand.confirmed:
            verdict = sniff_jsonl(cand.path, on_error=self._unreadable)
            if verdict is None:
                return
            if not verdict:
                self._rejected.add(cand.path)
                return
            cand.confirmed = True
        if self._real.setdefault(cand.real, cand.key) != cand.key:
            return  # the same file by another path (a link) is followed already
        src = make_source(cand, self._report, self.max_line, self.on_resume, self.keep)
        self._sources[cand.key] = src
        self._by_file[os.path.abspath(cand.path)] = src
        for extra in getattr(src, "watch_paths", list)():  # (a TensorBoard run's directory, a trackio WAL)
            self._by_file[os.path.abspath(extra)] = src

    def _forget(self, src: Source) -> None:
        self._missing.pop(src.cand.key, None)
        self._sources.pop(src.cand.key, None)
        self._by_file.pop(os.path.abspath(src.cand.path), None)
        for extra in getattr(src, "watch_paths", list)():
            self._by_file.pop(os.path.abspath(extra), None)
        self._real.pop(src.cand.real, None)

    def _drop(self, src: Source) -> None:
        self._forget(src)
        tail = getattr(src, "tail", None)
        # (from the start of a line it has not finished: a metrics line cut by the read must be found whole)
        if tail is not None and src.cand.kind == "console":
            self._rejected.add(src.cand.path, tail.offset - tail.pending, tail.offset)
        else:
            self._rejected.add(src.cand.path)

    def note(self, message: str) -> None:
        """Report a problem of the follower's own (not of a file's line) as its files' are reported."""
        self._report(BadLine("steptable", 0, message))

    def _run_above(self, path: Path, levels: int) -> Source | None:
        """The followed TensorBoard run whose directory is within ``levels`` directories above ``path``."""
        for d in Path(os.path.abspath(path)).parents[:levels] if levels else ():
            if (src := self._by_file.get(str(d))) is not None and src.cand.kind == "tensorboard":
                return src
        return None

    def on_events(self, paths: set[Path]) -> set[str]:
        """Read the sources the events name; classify new files and directories where they appeared (a full
        discovery would walk every root on every burst of events)."""
        hit: list[Source] = []
        with self._pass:
            for p in sorted(paths):  # (a set: in its order, runs found together came in a new order each launch)
                src = self._by_file.get(os.path.abspath(p))
                if src is None and p.name.startswith("events.out.tfevents."):  # a new file of a TensorBoard run
                    src = self._run_above(p, 1 + CURVE_DEPTH)  # (or of an add_scalars curve's below the run's)
                elif src is None and p.is_dir() and (up := self._run_above(p, CURVE_DEPTH)) is not None:
                    hit.append(up)  # a directory made below a TensorBoard run's (a new curve; or a run of its own)
                if src is None and p.name == "trainer_state.json":
                    src = next((s for s in self._sources.values() if s.cand.kind == "trainer_state"
                                and p.is_relative_to(s.cand.run_dir.absolute())), None)
                if src is not None:
                    hit.append(src)
                elif p.suffix.lower() in _WATCHED_SUFFIXES or p.is_dir():
                    for cand in discover_at(p, self.roots, self._unreadable, self._rejected.settled):
                        if cand.key not in self._sources:
                            self._add(cand)
                        # (or a run followed already: a resumed W&B run's new file is that run's)
                        if (got := self._sources.get(cand.key)) is not None:
                            hit.append(got)
            return self.tick(discover=False, only=list(dict.fromkeys(hit)))


def load(
    paths: Iterable[str | Path] | str | Path, on_resume: ResumeReader | None = None
) -> dict[str, RunStore]:
    """Every run under ``paths``, read once (for one-shot commands: ``tail``, ``summary``)."""
    follower = Follower(paths, on_resume=on_resume)
    follower.scan()
    follower.finish()
    return follower.stores
