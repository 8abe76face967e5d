"""The files of one W&B run that later processes resumed.

``wandb.init(id=..., resume="allow" | "must")`` in a new process (a job requeued after a preemption, a crash resumed
from its checkpoint) does not append to the first process's file: it makes a directory of its own beside the first,
``run-<time>-<id>`` (``offline-run-<time>-<id>`` offline), with its own ``run-<id>.wandb`` holding what that process
logged, from the step it resumed at. They are one run: read as one (the pieces in the order of their processes,
the later one's rows replacing those it logged again), it is one seed to ``compare``, one line to ``runs``, and its
resume is told as a resume. A run id is a project's: directories of one id whose run records name other projects
are other runs (a fixed id such as ``baseline`` reused in two projects).

Lookups only (a directory listing, kept while the directory is unchanged; the first bytes of a run file whose
directory shares its id with another, for its project, kept by file).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Final

from steptable.ingest.files.regular import open_regular

#: a W&B run directory's name: ``run-20261130_162857-<id>`` (``offline-`` before it when offline)
_RUN_DIR: Final = re.compile(r"^(?:offline-)?run-(\d{8}_\d{6})-(.+)$")
_AGAIN: Final = re.compile(r"^(.+)-\d+$")
#: entries of a wandb directory looked at for the pieces of a run (a directory of many thousand runs is read no
#: further than this)
MAX_ENTRIES = 100_000
#: wandb directories whose listing is kept (by its modification time) between calls: discovery asks once a run file
MAX_KEPT = 64
#: a listing taken this soon (seconds) after its directory's last change may miss a directory made within the same
#: clock tick: it is kept for ``RECENT_KEEP`` seconds only, then taken again
RECENT_S = 1.0
RECENT_KEEP = 0.25

#: bytes of a run file read for its run record (wandb writes it first; its config, a trainer's arguments among it,
#: can take tens of KB)
HEAD_BYTES = 1 << 20
#: run files whose project is kept
MAX_PROJECTS = 4096

_kept: dict[str, tuple[int, float, dict[str, list[tuple[str, str]]]]] = {}
_projects: dict[tuple[int, int], str] = {}  # (device, inode) of a run file -> its project


def run_dir_id(name: str) -> tuple[str, str] | None:
    """(time, run id) of a W&B run directory's ``name``; None for any other name."""
    m = _RUN_DIR.match(name)
    return (m.group(1), m.group(2)) if m else None


def _ids(tail: str) -> tuple[str, ...]:
    """The run ids a run directory's name may be of, from what follows its time: that, and that without a ``-<n>``
    wandb adds where a directory of the same second and id is there already (two processes started together)."""
    m = _AGAIN.match(tail)
    return (tail, m.group(1)) if m else (tail,)


def pieces(path: Path) -> list[Path]:
    """The run files of ``path``'s W&B run, the first process's first (:func:`pieces_of`)."""
    return pieces_of(path)[0]


def pieces_of(path: Path) -> tuple[list[Path], bool]:
    """The run files of ``path``'s W&B run, the first process's first: the ``run-<id>.wandb`` of every directory
    beside ``path``'s own named for the same id, by the time in their names (offline and online alike), whose run
    record names the same project; and whether every such directory was judged (False while one has no run file or
    no run record yet: it may be a piece soon). ``[path]`` where its directory is not named so, holds another file
    name, or its parent cannot be listed."""
    found = _same_id(path)
    if len(found) < 2:
        return [path], True
    dir_name, name = path.parent.name, path.name
    run_id = name[4:-6]
    up, settled = path.parent.parent, True
    files: list[tuple[Path, str]] = []
    for _, d in found:
        p = path if d == dir_name else up / d / name
        project = _project(p)
        if project is not None:
            files.append((p, project))
        elif d.endswith(f"-{run_id}") or os.path.isfile(p):  # (``<id>-1`` without our file: another run's id)
            settled = False  # (a directory of this id without its run record yet: it may be a piece soon)
    own = next((pr for p, pr in files if p == path), None)
    if own is None:  # (its own run record not written yet: alone until it is)
        return [path], False
    return [p for p, pr in files if pr == own], settled


def undecided(path: Path) -> bool:
    """Is ``path`` a run file beside other directories of its run id whose own run record is not written yet (a
    process that resumed a run, just started)? Which run it is a piece of is known once the record is there. A file
    of :data:`HEAD_BYTES` or more without one in its head, or one whose head is damaged, never gets one there:
    decided (read alone)."""
    if len(_same_id(path)) < 2:
        return False
    project, damaged = _head(path)
    if project is not None or damaged:  # (damaged: read alone, the reader says what it skipped)
        return False
    try:
        return os.path.getsize(path) < HEAD_BYTES
    except OSError:  # (gone: the read says so)
        return False


def _same_id(path: Path) -> list[tuple[str, str]]:
    """The W&B run directories beside ``path``'s own named for its run id, its own among them, as (time, name) in
    order; [] where its directory is not named so, it holds another file name, or its parent cannot be listed."""
    run_dir, name = os.path.split(path)
    parent, dir_name = os.path.split(run_dir)
    got = run_dir_id(dir_name)
    run_id = name[4:-6] if name.startswith("run-") and name.endswith(".wandb") else None
    if got is None or run_id is None or run_id not in _ids(got[1]):
        return []
    by_id = _listing(parent or os.curdir)
    return by_id.get(run_id, []) if by_id is not None else []


def _project(path: Path) -> str | None:
    """The project a run file's run record names ("" where it names none); None where the file or its run record
    cannot be read (yet)."""
    return _head(path)[0]


def _head(path: Path) -> tuple[str | None, bool]:
    """(:func:`_project`, whether the head read is damaged: a record in it skipped, or not a run file's)."""
    try:
        st = os.stat(path)
        if (got := _projects.get((st.st_dev, st.st_ino))) is not None:
            return got, False
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            head = f.read(HEAD_BYTES)
    except OSError:
        return None, False
    from steptable.ingest.readers.wandb import WandbParser  # (only where two directories share an id)

    try:
        parsed = WandbParser(str(path)).parse(head, 0)[1]
    except Exception:  # (a damaged head: the reader reports it when the run is read)
        return None, True
    meta = parsed.meta
    if "project" not in meta:
        return None, bool(parsed.bad)  # (no run record in what is written so far, or it was skipped)
    project = str(meta["project"])
    if len(_projects) >= MAX_PROJECTS:
        del _projects[next(iter(_projects))]
    _projects[(st.st_dev, st.st_ino)] = project
    return project, False


def _listing(parent: str) -> dict[str, list[tuple[str, str]]] | None:
    """The W&B run directories in ``parent`` by run id, each as (time, name) in order; None where it cannot be
    listed. Kept while the directory is unchanged: a sweep of a thousand runs in one wandb directory is listed once
    a discovery, not once a run."""
    key = os.fspath(parent)  # (as given: the directory's time tells a listing of another apart)
    try:
        mtime = os.stat(key).st_mtime_ns
        now = time.time()
        if (hit := _kept.get(key)) is not None and hit[0] == mtime and now < hit[1]:
            return hit[2]
        by_id: dict[str, list[tuple[str, str]]] = {}
        with os.scandir(key) as it:
            for i, e in enumerate(it):
                if i >= MAX_ENTRIES:
                    break
                if (got := run_dir_id(e.name)) is not None:
                    for run_id in _ids(got[1]):
                        by_id.setdefault(run_id, []).append((got[0], e.name))
    except OSError:
        return None
    for runs in by_id.values():
        runs.sort()
    if len(_kept) >= MAX_KEPT and key not in _kept:
        del _kept[next(iter(_kept))]
    _kept[key] = (mtime, now + RECENT_KEEP if now - mtime / 1e9 < RECENT_S else float("inf"), by_id)
    return by_id
