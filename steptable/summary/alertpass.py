"""``summary``'s alert pass: each run's history through the alert engine, with what else its alerts line says (the
rows a resume replaced, a stall, how the run ended). :class:`AlertsAhead` starts the pass in worker processes, over
groups of columns (and of a column's detectors) that scan apart (steptable.alerts.parts.scans), while the caller works
out the statistics: the alerts are the same, in the same order.

The workers are forked (they read the runs already in memory; only their alerts come back, pickled through a
pipe), so only where that is safe and pays (steptable.ingest.forkgate: POSIX but not macOS, no other thread, more
than one core that no other process is running on) and for a pass big enough (:data:`MIN_CELLS`). A worker
that dies, or that has not answered by its deadline, is killed and what it had not sent is worked out here: never
a missing or different result.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import selectors
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from steptable.alerts import history, parts
from steptable.alerts.engine import Alert, AlertConfig, earlier_end_alerts, end_alert
from steptable.ingest import forkgate

#: watched cells (rows x watched keys, all runs) under which the pass stays in this process: a worker costs ~20 ms
#: of CPU (the fork, pages copied on write, the pipes); a 10k-row run of 4 watched keys is ~30 ms faster with one
MIN_CELLS = 40_000
#: workers at most: a run's scan splits into 6 parts or fewer, and each fork copies the page tables of every run read
MAX_WORKERS = 8
#: task bundles at most (one 4-byte token each, all written to one pipe before the fork: it holds 64 KiB)
MAX_TOKENS = 4096


def _inputs(store: Any, now: float) -> tuple[list[str], bool]:
    """The keys the scan of ``store`` reads, and whether the run counts as stalled at ``now``."""
    from steptable.alerts.activity import STALLED, store_activity

    watched = AlertConfig().watched()  # only the columns the detectors read: every column as cells costs GBs
    # a stall against now only where the run should still be writing (an idle or ended run is no alert)
    return [k for k in store.keys if k in watched], store_activity(store, now).state == STALLED


def _scan(store: Any, keys: Sequence[str], clock: bool, now: float | None, merge: bool = True,
          only: parts.Detectors = None) -> list[Alert]:
    walls = store.wall_times if clock and len(store.wall_times) else None
    return history.scan(store.steps, {k: store.cells(k) for k in keys}, walls, now=now if clock else None,
                        resumes=set(store.resumes), merge=merge, only=only)


def _finish(store: Any, now: float, stalled: bool, found: list[Alert]) -> list[Alert]:
    """The alerts line of ``store``'s run from its scan's ``found``: those of rows a resume replaced (RunStore.replaced)
    first, then ``found``, then how its StepLogger's ``with`` block ended where that was a crash or an interruption
    (its description, steptable.table.runinfo)."""
    from steptable.alerts.engine import clockless_stall

    end = end_alert(store.meta.get("runinfo"), store.steps[-1]) if len(store.steps) else None
    # the rows a resume replaced and how the process before a resume ended came first (why it was restarted)
    found = [*store.replaced, *earlier_end_alerts(store.meta.get("runinfo")), *found]
    if stalled and (stall := clockless_stall(store, now)) is not None:  # rows without a clock of their own
        found.append(stall)
    return found if end is None else [*found, end]


def workers_for(cells: int) -> int:
    """Worker processes for a pass over ``cells`` watched cells: 0 (this process alone) where forking is not safe
    or does not pay, else one fewer than the cores this process may use that no other process is running on (it
    works too), at most MAX_WORKERS (steptable.ingest.forkgate)."""
    if cells < MIN_CELLS or not forkgate.forkable():
        return 0
    return max(0, min(MAX_WORKERS + 1, forkgate.free_cores()) - 1)


class AlertsAhead(Mapping[str, list[Alert]]):
    """Every run's alerts keyed by run id (the last store of an id wins), as scanning each run in turn in this
    process gives them. Worker processes start at once; reading any alert waits for the pass to end (this process
    takes the tasks no worker has taken yet). :meth:`close` ends the workers if the alerts are never read."""

    def __init__(self, stores: Sequence[Any], now: float) -> None:
        self._stores, self._now = list(stores), now
        self._plans: list[tuple[bool, list[int]]] = []  # per store: split into parts?, its task ids
        self._keys: list[tuple[str, ...]] = []  # per store: the keys its scan reads
        # (store, keys, with the clock, merged, the detectors that read them: None for every one)
        self._tasks: list[tuple[int, tuple[str, ...], bool, bool, parts.Detectors]] = []
        inputs = [_inputs(s, now) for s in self._stores]
        self._stalled = [stalled for _, stalled in inputs]
        cells = sum(len(s) * len(keys) for s, (keys, _) in zip(self._stores, inputs, strict=True))
        self.workers = workers_for(cells)
        for i, (s, (keys, _)) in enumerate(zip(self._stores, inputs, strict=True)):
            self._keys.append(tuple(keys))
            # (in this process alone, one scan a run: the parts together read what it reads, and merge; whether
            # the steps only go up, as merging asks, is read while the workers work: _collect)
            groups = parts.scans(keys) if self.workers > 0 and len(s) > 1 else []
            if len(groups) > 1:
                ids = [self._task(i, g, False, False, only) for g, only in groups] + [self._task(i, (), True, False)]
                self._plans.append((True, ids))
            else:
                self._plans.append((False, [self._task(i, tuple(keys), True, True)]))
        self._done: dict[int, list[Alert]] = {}
        self._found: dict[str, list[Alert]] | None = None
        self._pids: dict[int, int] = {}  # a worker's pid -> the read end of its results pipe
        self._tokens = -1
        self._forked_at = time.monotonic()
        if self.workers > 0:
            self._start()

    def _task(self, store: int, keys: tuple[str, ...], clock: bool, merged: bool,
              only: parts.Detectors = None) -> int:
        self._tasks.append((store, keys, clock, merged, only))
        return len(self._tasks) - 1

    def _run(self, t: int) -> list[Alert]:
        i, keys, clock, merged, only = self._tasks[t]
        return _scan(self._stores[i], keys, clock, self._now if self._stalled[i] else None, merged, only)

    def _bundles(self) -> list[list[int]]:
        """Task ids, the biggest first (rows x keys read), in at most MAX_TOKENS bundles."""
        order = sorted(range(len(self._tasks)), reverse=True,
                       key=lambda t: len(self._stores[self._tasks[t][0]]) * (len(self._tasks[t][1]) or 0.1))
        per = math.ceil(len(order) / MAX_TOKENS)
        return [order[j:j + per] for j in range(0, len(order), per)]

    def _start(self) -> None:
        self._todo = self._bundles()
        self.workers = min(self.workers, len(self._todo))
        r, w = os.pipe()
        try:
            os.write(w, b"".join(b.to_bytes(4, "little") for b in range(len(self._todo))))
        finally:
            os.close(w)  # (no writer left: a read of the empty pipe says so at once, in every process)
        self._tokens = r
        for _ in range(self.workers):
            rr, rw = os.pipe()
            try:
                pid = forkgate.fork()
            except OSError:  # (no process to be had: the rest is worked out here)
                os.close(rr)
                os.close(rw)
                break
            if pid == 0:  # the worker: never returns
                os.close(rr)
                self._work(rw)
            os.close(rw)
            self._pids[pid] = rr
        self._forked_at = time.monotonic()

    def _work(self, out: int) -> None:
        """A worker's life: take bundles until none is left, then send their tasks' alerts (one frame: 8-byte
        length, pickle; at the end, so that a pipe the parent does not read yet never holds up the work) and exit
        without running this process's exit handlers or flushing its buffers (they are the parent's)."""
        status = 1
        try:
            gc.disable()  # (a collection would touch, and so copy, every object of the runs read)
            for rfd in self._pids.values():  # (the other workers' pipes, open in the parent when this one forked)
                os.close(rfd)
            done: list[tuple[int, list[Alert]]] = []
            while got := os.read(self._tokens, 4):
                done += [(t, self._run(t)) for t in self._todo[int.from_bytes(got, "little")]]
            data = pickle.dumps(done)
            view = memoryview(len(data).to_bytes(8, "little") + data)
            while view:
                view = view[os.write(out, view):]
            status = 0
        finally:  # (KeyboardInterrupt and SystemExit too)
            os._exit(status)

    def _collect(self) -> dict[str, list[Alert]]:
        if self._found is not None:
            return self._found
        steady = [True] * len(self._plans)
        try:
            if self._tokens >= 0:  # this process's share: the bundles no worker has taken
                while got := os.read(self._tokens, 4):
                    self._done.update((t, self._run(t)) for t in self._todo[int.from_bytes(got, "little")])
                steady = [not split or parts.increasing(s.steps)  # (while the workers finish)
                          for s, (split, _) in zip(self._stores, self._plans, strict=True)]
                self._receive()
        finally:
            self.close()
        for t in range(len(self._tasks)):  # what no worker sent (one died or was too late), or all without workers
            if t not in self._done:
                self._done[t] = self._run(t)
        found: dict[str, list[Alert]] = {}
        for i, (split, ids) in enumerate(self._plans):
            if not steady[i]:  # steps that go back or repeat (merging places alerts by step): one scan, here
                said = _scan(self._stores[i], self._keys[i], True, self._now if self._stalled[i] else None)
            else:
                said = parts.merge([self._done[t] for t in ids]) if split else self._done[ids[0]]
            found[self._stores[i].run] = _finish(self._stores[i], self._now, self._stalled[i], said)
        self._found = found
        return found

    def _receive(self) -> None:
        """The workers' frames until each pipe ends or the deadline passes; complete frames only."""
        deadline = forkgate.deadline(self._forked_at)
        bufs = {fd: bytearray() for fd in self._pids.values()}
        with selectors.DefaultSelector() as sel:
            for fd in bufs:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map() and (left := deadline - time.monotonic()) > 0:
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 1 << 20)
                    if chunk:
                        bufs[key.fd] += chunk
                    else:
                        sel.unregister(key.fd)
        for buf in bufs.values():
            at = 0
            while at + 8 <= len(buf) and at + 8 + (n := int.from_bytes(buf[at:at + 8], "little")) <= len(buf):
                self._done.update(pickle.loads(buf[at + 8:at + 8 + n]))
                at += 8 + n

    def close(self) -> None:
        """End the workers still running (killed) and free their pipes; the alerts not read yet are then worked
        out in this process when read."""
        for pid, fd in self._pids.items():
            forkgate.end(pid, fd)
        self._pids.clear()
        if self._tokens >= 0:
            os.close(self._tokens)
            self._tokens = -1

    def __getitem__(self, run: str) -> list[Alert]:
        return self._collect()[run]

    def __iter__(self) -> Iterator[str]:
        return iter(self._collect())

    def __len__(self) -> int:
        return len(self._collect())
