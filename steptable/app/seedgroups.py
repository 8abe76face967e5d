"""Seed groups in watch: the runs that differ only by a seed part (``steptable.compare.groups``) are shown as one
table of per-step means across the seeds, with ``n_seeds`` per row (:class:`~steptable.app.seedmeans.SeedMeans`);
``o`` on that table opens it into the seeds' own tables, and ``o`` on one of them folds them back. The group's table
is an arm of the session like a run's (its own run id, ``GROUP_PREFIX`` + the group's name), brought up to date
after every batch of the seeds' rows; a folded group's seeds, and an open group's table, are hidden arms."""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptable.app.model import Store
from steptable.app.seedmeans import SeedMeans
from steptable.compare.groups import group_runs

if TYPE_CHECKING:
    from steptable.app.session import Session

#: the run id of a group's table: this and the group's name (no file's run id starts with it)
GROUP_PREFIX = "\0group:"


def is_group(run_id: str) -> bool:
    return run_id.startswith(GROUP_PREFIX)


class SeedGroups:
    """The session's seed groups: their tables of means, and which are open (shown as their seeds)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.means: dict[str, SeedMeans] = {}  # group run id -> its table
        self.members: dict[str, list[str]] = {}  # group run id -> its seeds' run ids
        self.opened: set[str] = set()
        self._folded: set[str] = set()  # the run ids this part hid (a user's hidden arms are theirs)

    def real_runs(self) -> dict[str, Store]:
        """Run id -> store of the runs read from files (not the groups' tables), in the session's order."""
        return {rid: r.store for rid, r in self.session.runs.items() if not is_group(rid)}

    def update(self) -> list[tuple[str, Store, str | None]]:
        """The groups' tables brought up to date with their seeds (a new group gets its table), as a batch for the
        session: (group run id, its store, None) for each table that changed or is new; the hidden arms set for
        the groups' folds."""
        runs = self.real_runs()
        by_id = {id(s): rid for rid, s in runs.items()}
        batch: list[tuple[str, Store, str | None]] = []
        current: dict[str, list[str]] = {}
        for name, members in group_runs([s for s in runs.values() if len(s)]).items():
            if len(members) < 2:
                continue
            gid = GROUP_PREFIX + name
            current[gid] = [by_id[id(m.run)] for m in members]
            seeds = [runs[rid] for rid in current[gid]]
            means = self.means.get(gid)
            if means is None:
                means = self.means[gid] = SeedMeans(name, seeds)
            if means.update(seeds) or gid not in self.session.runs:
                batch.append((gid, means.store, None))
        self.members = current
        self._fold()
        return batch

    def _fold(self) -> None:
        """Hide each folded group's seeds and each open group's table (and nothing this part hid before that
        should now show)."""
        hidden = self.session.hidden
        want = set()
        for gid, seeds in self.members.items():
            want |= {gid} if gid in self.opened else set(seeds)
        hidden -= self._folded - want
        hidden |= want
        self._folded = want

    def folded_seeds(self) -> set[str]:
        """The seeds hidden because their group is folded (shown as its table)."""
        return {rid for gid, seeds in self.members.items() if gid not in self.opened for rid in seeds}

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
