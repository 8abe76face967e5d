"""Seed groups in watch: the runs that differ only by a seed part (``steptable.compare.groups``) are shown as one
table of per-step means across the seeds, with ``n_seeds`` per row (:class:`~steptable.app.seedmeans.SeedMeans`);
a run with the same rows as another (one training through several loggers, steptable.ingest.copies) is no seed: it
is hidden. ``o`` on that table opens it into the seeds' own tables, and ``o`` on one of them folds them back. The
group's table is an arm of the session like a run's (its own run id, ``GROUP_PREFIX`` + the group's name), brought
up to date after every batch of the seeds' rows; a folded group's seeds, and an open group's table, are hidden arms.

A build of more than ``INLINE_ROWS`` rows of means (a group seen for the first time, a seed rewritten) runs on its
own thread and is taken when it is done (:class:`MeansReady`, then :meth:`SeedGroups.finished`): until then a new
group shows as its seeds, a group made again keeps its table, and :meth:`SeedGroups.note` says what is being
computed; the few rows of means a live run adds at a time are made at once."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from textual.message import Message

from steptable.app.model import Store
from steptable.table.cells import sanitize

if TYPE_CHECKING:
    from steptable.app.seedmeans import Build, SeedMeans
    from steptable.app.session import Session
    from steptable.ingest.copies import Rows

#: the run id of a group's table: this and the group's name (no file's run id starts with it)
GROUP_PREFIX = "\0group:"
#: builds of up to this many rows of means are made at once, on the caller's thread (~20 ms at 3 seeds x 40
#: metrics); larger ones on a thread of their own
INLINE_ROWS = 1000
#: the pause between two chunks of a build on its own thread (seconds): the GIL goes to the UI thread meanwhile
PAUSE = 0.002


class MeansReady(Message):
    """A seed group's build, run on its own thread, is done (or failed: ``build.error``)."""

    def __init__(self, group: str, build: Build) -> None:
        super().__init__()
        self.group = group
        self.build = build


def is_group(run_id: str) -> bool:
    return run_id.startswith(GROUP_PREFIX)


class SeedGroups:
    """The session's seed groups: their tables of means, and which are open (shown as their seeds)."""

    def __init__(self, session: Session, post: Callable[[Message], Any] | None = None,
                 stop: threading.Event | None = None, roots: Sequence[str] = (),
                 pattern: Callable[[], re.Pattern[str] | None] = lambda: None) -> None:
        """``post``: how a build's thread hands back its result (thread-safe, e.g. ``App.post_message``); without
        it every build is made at once. ``stop``: set when the app quits (a build stops between chunks). ``roots``:
        the paths watched (a file named there is kept over its copies). ``pattern``: the seed part of a run's name
        (steptable.app.armrule; asked at the first grouping, after the first frame)."""
        from steptable.ingest.copies import Copies  # (ingest is read after the first frame)

        self.session = session
        self.pattern = pattern
        self.copies = Copies(roots)
        self._copies_told: set[str] = set()
        self._post = post
        self._stop = stop or threading.Event()
        self._done: set[str] = set()  # groups whose build finished since the last update
        self._failed: set[str] = set()  # groups whose build failure was told (once each)
        self.means: dict[str, SeedMeans] = {}  # group run id -> its table
        self.members: dict[str, list[str]] = {}  # group run id -> its seeds' run ids
        self.opened: set[str] = set()
        self._folded: set[str] = set()  # the run ids this part hid (a user's hidden arms are theirs)
        self.gone: set[str] = set()  # runs whose file is gone (deleted, its directory renamed): no seeds (the app's)

    def real_runs(self) -> dict[str, Store]:
        """Run id -> store of the runs read from files (not the groups' tables), in the session's order."""
        return {rid: r.store for rid, r in self.session.runs.items() if not is_group(rid)}

    def distinct_runs(self) -> dict[str, Store]:
        """:meth:`real_runs` but the copies of another run (as of the last :meth:`update`) and the runs put away
        (``Session.put_away``): the runs the tables' compare view compares."""
        gone = self.session.put_away
        return {rid: s for rid, s in self.real_runs().items() if rid not in self.copies.of and rid not in gone}

    def update(self) -> list[tuple[str, Store, str | None]]:
        """The groups' tables brought up to date with their seeds (a new group gets its table), as a batch for the
        session: (group run id, its store, None) for each table that changed or is new; the hidden arms set for
        the groups' folds. A run put away (``Session.put_away``) or whose file is gone (``gone``) is no
        seed: a group of the others, or none."""
        # (imported here, after the first frame: the preview is not grouped; the means read with ingest's stores)
        from steptable.app.seedmeans import SeedMeans
        from steptable.compare.groups import group_runs

        runs = self.real_runs()
        by_id = {id(s): rid for rid, s in runs.items()}
        batch: list[tuple[str, Store, str | None]] = []
        current: dict[str, list[str]] = {}
        filled = {rid: cast("Rows", s) for rid, s in runs.items() if len(s)}  # (the runs read from files: RunStores)
        copy_of = self.copies.update(filled)
        self._tell_copies()
        gone = self.session.put_away
        # (a run whose file is gone keeps its rows as last read, in a table of its own; renamed, its new path is a
        # new run, and that one is the seed)
        kept = [runs[rid] for rid in filled if rid not in copy_of and rid not in gone and rid not in self.gone]
        for name, members in group_runs(kept, self.pattern()).items():
            if len(members) < 2:
                continue
            gid = GROUP_PREFIX + name
            current[gid] = [by_id[id(m.run)] for m in members]
            seeds = [runs[rid] for rid in current[gid]]
            means = self.means.get(gid)
            if means is None:
                means = self.means[gid] = SeedMeans(name, seeds)
            build = means.plan(seeds)
            if build is not None and self._post is not None and build.rows() > INLINE_ROWS:
                self._start(gid, build)
            elif build is not None:
                build.run()
                means.finish(build)
            shown = gid in self.session.runs
            if not shown and means.building is not None:  # a new group's first table: its seeds show meanwhile
                del current[gid]
            elif (build is not None and means.building is None) or gid in self._done or not shown:
                batch.append((gid, means.store, None))
        self._done.clear()
        self.members = current
        self._fold()
        return batch

    def _start(self, gid: str, build: Build) -> None:
        post = self._post
        assert post is not None

        def work() -> None:
            try:
                if not build.run(pause=lambda: self._stop.wait(PAUSE)):
                    return  # (quitting)
            except Exception as e:  # a bug of ours, or a seed cut short under the build: told, made again later
                build.error = e
            post(MeansReady(gid, build))

        threading.Thread(target=work, name="steptable-seedmeans", daemon=True).start()

    def finished(self, message: MeansReady) -> None:
        """Take a build done on its own thread (the UI thread); :meth:`update` then shows it."""
        means = self.means.get(message.group)
        if means is None or means.building is not message.build:
            return
        means.finish(message.build)
        error = message.build.error
        if error is None:
            self._done.add(message.group)
        elif message.group not in self._failed:
            self._failed.add(message.group)
            why = f"{type(error).__name__}: {error}"[:300]
            name = message.group.removeprefix(GROUP_PREFIX)
            self.session.problems.append(sanitize(f"the mean of the seeds of {name} failed ({why}); it is made "
                                                  "again with their next rows"))  # (names from the disk)

    def note(self) -> str:
        """What is being computed, for the status line ("" when nothing)."""
        parts = [f"computing the mean of {len(m.building.seeds)} seeds of {m.name}..."
                 for m in self.means.values() if m.building is not None]
        return " · ".join(parts)

    def _tell_copies(self) -> None:
        from steptable.ingest.copies import left_out

        if new := self.copies.of.keys() - self._copies_told:
            self._copies_told |= new
            self.session.problems.append(left_out(len(new), "hidden"))

    def _fold(self) -> None:
        """Hide each folded group's seeds, each open group's table, each copy of another run and the table of a
        group that is no more (what this part hid before shows again where it should, a run put away excepted);
        the copies and the groups' tables are not counted in the events."""
        hidden = self.session.hidden
        # (a group whose members turned out to be copies of one run is no group: its table is hidden)
        want = set(self.copies.of) | {gid for gid in self.means if gid not in self.members}
        for gid, seeds in self.members.items():
            want |= {gid} if gid in self.opened else set(seeds)
        hidden -= self._folded - want - self.session.put_away  # (a seed put away stays hidden as such)
        hidden |= want
        self._folded = want
        # (a copy's alerts and stalls are its original's again; a group's table has its seeds')
        self.session.log.uncounted = set(self.copies.of) | set(self.means)

    @property
    def folded(self) -> frozenset[str]:
        """The runs this part hides: the seeds of folded groups, the tables of open ones, the copies of a run."""
        return frozenset(self._folded)

    def folded_seeds(self) -> set[str]:
        """The seeds hidden because their group is folded (shown as its table)."""
        return {rid for gid, seeds in self.members.items() if gid not in self.opened for rid in seeds}

    def shown_runs(self) -> set[str]:
        """The runs whose rows are on screen: those not hidden, and the seeds of each folded group whose table of
        means is shown (their alerts and samples are that table's)."""
        hidden = self.session.hidden
        return {rid for rid in self.session.runs if rid not in hidden} | {
            rid for gid, seeds in self.members.items() if gid not in self.opened and gid not in hidden
            for rid in seeds}

    def quiet(self, gid: str, stalls: dict[str, float], idle: dict[str, Any]) -> tuple[float | None, Any, str | None]:
        """(seconds stalled, idle activity, the seed that is so) of group ``gid``'s table, which is as quiet as its
        seeds (its rows stop at the slowest one's): the longest gap of a seed stalled, else the longest of a seed
        idle; neither (and no seed) when none is (seeds that all ended: the group ended). ``stalls``, ``idle``: the
        session's, of every run."""
        seeds = self.members.get(gid, [])
        if gaps := [(stalls[s], s) for s in seeds if s in stalls]:
            gap, seed = max(gaps)
            return gap, None, seed
        quiet = [(idle[s], s) for s in seeds if s in idle]
        if not quiet:
            return None, None, None
        act, seed = max(quiet, key=lambda a: a[0].gap or 0.0)
        return None, act, seed

    def group_of(self, run_id: str) -> str | None:
        """The group run id ``run_id`` is (a group's table) or belongs to (a seed); None for a run on its own."""
        if run_id in self.members:
            return run_id
        return next((gid for gid, seeds in self.members.items() if run_id in seeds), None)

    def toggle(self, run_id: str) -> str | None:
        """Open the group of ``run_id``'s table, or fold it back; the run id to give the focus to (the first seed,
        or the group's table), None when ``run_id`` is in no group."""
        gid = self.group_of(run_id)
        if gid is None:
            return None
        if gid in self.opened:
            self.opened.discard(gid)
            target = gid
        else:
            self.opened.add(gid)
            target = self.members[gid][0]
        self._fold()
        return target
