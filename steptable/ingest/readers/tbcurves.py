"""The curves ``SummaryWriter.add_scalars`` writes: a directory of its own per curve, inside the run's.

``writer.add_scalars("loss", {"train": a, "val": b}, step)`` (torch's SummaryWriter, tensorboardX; Lightning's
TensorBoardLogger for a metric logged as a dict) writes nothing into the run's own event files: each curve gets a
writer of its own, whose events carry the main tag alone, in ``<run>/<main tag, "/" as "_">_<curve>/`` (torch) or
``<run>/<main tag>/<curve>/`` (tensorboardX). TensorBoard lists each such directory as a run and overlays them on the
main tag's chart. Here they are columns of the run, ``<main tag>/<curve>`` (``loss/train``, ``loss/val``): one
training is one run, and compare does not take its curves for arms, nor the same curve of two arms for seeds of one.

A curve is known by where its directory is, its first scalar's tag, and event files of the run's own above it; until
that scalar is written (a writer flushes every few events) a directory below a run's is *pending*: neither a run nor
a curve yet, and looked at again.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from steptable.ingest.files.regular import open_regular

EVENTS: Final = re.compile(r"^events\.out\.tfevents\.")
#: bytes of an event file read for its first tag, then more (the file_version event and a first scalar take ~130)
_SNIFF: Final = (512, 1 << 14)
#: directory levels below a run's a curve may be (tensorboardX: ``<run>/<main tag's parts>/<curve>``)
DEPTH: Final = 4
#: verdicts kept, for the event files of this many runs: first tags (path -> (inode, size or -1, tag)) and pending
#: curves (path -> ((inode, size), curve))
_KEPT: Final = 1 << 16
_TAGS: dict[str, tuple[int, int, str | None]] = {}
_PENDING: dict[str, tuple[tuple[int, int], Curve | None]] = {}
#: what tensorboardX's tag cleaning replaces with "_"
_UNCLEAN: Final = re.compile(r"[^-/\w.]")


@dataclass(frozen=True, slots=True)
class Curve:
    """A curve directory: the run directory whose columns it holds, its events' tag and the curve's name in
    ``add_scalars``' dict (both "" while it is pending)."""

    run: Path
    tag: str = ""
    name: str = ""

    @property
    def pending(self) -> bool:
        return not self.tag

    def column(self, tag: str) -> str:
        """The run's column for ``tag`` read from this curve's files."""
        return f"{tag}/{self.name}"


def event_names(d: Path) -> list[str]:
    """The event files directly in ``d``, oldest first (by the creation time in their names, then by name), so a
    resumed run's curves are read after the files of the session they belong to. Raises OSError."""
    return sorted((e.name for e in os.scandir(d) if EVENTS.match(e.name) and e.is_file()), key=event_order)


def event_order(name: str) -> list[str | int]:
    """An event file's place among a run's files: its name with the numbers in it read as numbers
    (``events.out.tfevents.<unix seconds>.<host>.<pid>.<writer number>``: the 10th writer of a process after the 9th).
    """
    parts: list[str | int] = re.split(r"(\d+)", name)
    parts[1::2] = [int(x) for x in parts[1::2]]
    return parts


def first_tag(path: Path) -> str | None:
    """The tag of the first scalar in event file ``path``; None while it holds none (or cannot be read). A file's
    first tag is kept while the file is the same, its absence while the file has not grown (discovery asks again on
    every pass, of every run of a sweep)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    known = _TAGS.get(str(path))
    if known is not None and known[0] == st.st_ino and known[1] in (st.st_size, -1):
        return known[2]
    tag = _read_first_tag(path)
    _keep(_TAGS, str(path), (st.st_ino, st.st_size if tag is None else -1, tag))
    return tag


def _keep(cache: dict[str, Any], key: str, value: Any) -> None:
    if len(cache) >= _KEPT:
        cache.clear()
    cache[key] = value


def _read_first_tag(path: Path) -> str | None:
    from steptable.ingest.readers.tensorboard import EventParser

    try:
        with open_regular(path) as f:
            for size in _SNIFF:  # (a few records hold the first scalar; parsing 4 KB of them is 10x the cost)
                f.seek(0)
                data = f.read(size)
                parser = EventParser(str(path), bulk=False)
                off = 0
                while off < len(data):
                    used, parsed = parser.parse(memoryview(data)[off:], off)
                    for row in parsed.rows or ():
                        return next((k for k in row if k not in ("step", "wall_time")), None)
                    if not used:
                        break
                    off += used
                if len(data) < size:
                    break
    except OSError:
        return None
    return None


def curve_at(d: Path, tag: str) -> Curve | None:
    """The curve directory ``d`` is, its events carrying ``tag``, by add_scalars' names for it (torch's
    ``<run>/<tag, "/" as "_">_<curve>``, tensorboardX's ``<run>/<tag>/<curve>``) and a run directory with event files of
    its own; else None."""
    prefix = tag.replace("/", "_") + "_"
    name = d.name
    if (name.startswith(prefix) or _as_tag(name).startswith(prefix)) and len(name) > len(prefix) \
            and holds_events(d.parent):
        return Curve(d.parent, tag, name[len(prefix):])
    parts = tag.split("/")
    up = d.parent
    if all(parts) and len(up.parts) > len(parts) \
            and all(p == t or _as_tag(p) == t for p, t in zip(up.parts[-len(parts):], parts, strict=True)):
        run = up.parents[len(parts) - 1]
        if holds_events(run):
            return Curve(run, tag, d.name)
    return None


def _as_tag(name: str) -> str:
    """A directory's name as the tag it was named for, where the writer cleaned that tag: tensorboardX names the
    directory by the main tag as given and writes it cleaned (``Training vs. Loss`` -> ``Training_vs._Loss``)."""
    return _UNCLEAN.sub("_", name)


def curve_of(path: Path) -> Curve | None:
    """The curve whose event file ``path`` is; a pending one (the nearest directory above within :data:`DEPTH`
    that holds event files is its run) while the file holds no scalar; None when it is no curve."""
    d = path.parent
    tag = first_tag(path)
    if tag is not None:
        return curve_at(d, tag)
    try:
        st = os.stat(path)
    except OSError:
        return None
    # (the verdict kept while the file has not grown: a sweep's fresh runs would list the directories above each)
    known = _PENDING.get(str(path))
    if known is not None and known[0] == (st.st_ino, st.st_size):
        return known[1]
    got = next((Curve(run) for run in list(d.parents)[:DEPTH] if holds_events(run)), None)
    _keep(_PENDING, str(path), ((st.st_ino, st.st_size), got))
    return got


def holds_events(d: Path) -> bool:
    """Does directory ``d`` hold event files (a writer's of its own)?"""
    try:
        return any(EVENTS.match(n) for n in os.listdir(d))
    except OSError:
        return False


def curve_dirs(run_dir: Path) -> tuple[dict[Path, Curve], list[Path]]:
    """The directories below ``run_dir`` (to :data:`DEPTH` levels) that hold its curves, pending ones too; and every
    directory looked in (a new curve changes the time of the one it is made in). Raises OSError for ``run_dir``."""
    curves: dict[Path, Curve] = {}
    seen: list[Path] = []
    level = [run_dir]
    for _ in range(DEPTH):
        below = []
        for d in level:
            try:
                entries = [Path(e.path) for e in os.scandir(d) if e.is_dir() and not e.name.startswith(".")]
            except OSError:
                if d == run_dir:
                    raise
                continue
            for sub in entries:
                seen.append(sub)
                below.append(sub)
                try:
                    names = event_names(sub)
                except OSError:
                    continue
                if names and (c := curve_of(sub / names[0])) is not None and c.run == run_dir:
                    curves[sub] = c
        level = below
    return curves, seen
