"""The curves ``SummaryWriter.add_scalars`` writes: a directory of its own per curve, inside the run's.

``writer.add_scalars("loss", {"train": a, "val": b}, step)`` (torch's SummaryWriter and tensorboardX; Lightning's
TensorBoardLogger for a metric logged as a dict) writes nothing into the run's own event files: each curve gets a
writer of its own in ``<run>/<main tag, "/" as "_">_<curve>/``, whose events carry the main tag alone. TensorBoard
lists each such directory as a run and overlays them on the main tag's chart. Here they are columns of the run,
``<main tag>/<curve>`` (``loss/train``, ``loss/val``): one training is one run, and compare does not take its curves
for arms, nor the same curve of two arms for seeds of one.

A curve is known by its directory's name and the tag of its first scalar; until that scalar is written (a writer
flushes every few events) the directory is *pending*: neither a run nor a curve yet, and looked at again.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

EVENTS: Final = re.compile(r"^events\.out\.tfevents\.")
#: bytes of an event file read for its first tag, then more (the file_version event and a first scalar take ~130)
_SNIFF: Final = (512, 1 << 14)
#: first tags kept (path -> (inode, tag)), for the event files of this many runs
_TAGS_KEPT: Final = 1 << 16
_TAGS: dict[str, tuple[int, str]] = {}


@dataclass(frozen=True, slots=True)
class Curve:
    """A curve directory: its events' tag and the curve's name in ``add_scalars``' dict."""

    tag: str
    name: str

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


def may_hold_curve(d: Path) -> bool:
    """Could ``d`` be a curve directory by where it is: a ``<tag>_<curve>`` name inside a directory with event files
    of its own (the run's writer)? Nothing of ``d`` is read."""
    if "_" not in d.name:
        return False
    try:
        return any(EVENTS.match(n) for n in os.listdir(d.parent))
    except OSError:
        return False


def first_tag(path: Path) -> str | None:
    """The tag of the first scalar in event file ``path``; None while it holds none (or cannot be read). A file's
    first tag is kept while the file is the same (discovery asks again on every pass, of every run of a sweep)."""
    try:
        ino = os.stat(path).st_ino
    except OSError:
        return None
    known = _TAGS.get(str(path))
    if known is not None and known[0] == ino:
        return known[1]
    tag = _read_first_tag(path)
    if tag is not None:
        if len(_TAGS) >= _TAGS_KEPT:
            _TAGS.clear()
        _TAGS[str(path)] = (ino, tag)
    return tag


def _read_first_tag(path: Path) -> str | None:
    from steptable.ingest.readers.tensorboard import EventParser

    try:
        with open(path, "rb") as f:
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


def curve_name(dir_name: str, tag: str) -> str | None:
    """The curve a directory named ``dir_name`` holds for ``tag`` (``loss_train``, ``loss`` -> ``train``), or None
    when that is not how ``add_scalars`` names its directories."""
    prefix = tag.replace("/", "_") + "_"
    return dir_name[len(prefix):] or None if dir_name.startswith(prefix) else None


def curve_of(path: Path) -> Curve | bool:
    """What the directory of event file ``path`` is to the run above it: its :class:`Curve`; True while it may be
    one (pending: no scalar written yet); False when it is not one."""
    if "_" not in path.parent.name:
        return False
    tag = first_tag(path)  # (before the run's directory is listed: a sweep's run directories are many, and large)
    name = None if tag is None else curve_name(path.parent.name, tag)
    if (tag is not None and name is None) or not may_hold_curve(path.parent):
        return False
    return True if tag is None or name is None else Curve(tag, name)


def curve_dirs(run_dir: Path) -> dict[Path, Curve | None]:
    """The directories inside ``run_dir`` that hold its curves (None: pending). Raises OSError for ``run_dir``."""
    out: dict[Path, Curve | None] = {}
    for e in os.scandir(run_dir):
        if "_" not in e.name or not e.is_dir():
            continue
        d = Path(e.path)
        try:
            names = event_names(d)
        except OSError:
            continue
        if names:
            got = curve_of(d / names[0])
            if got is not False:
                out[d] = got if isinstance(got, Curve) else None
    return out
