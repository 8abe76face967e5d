"""Finding and reading user schema files: the log directories' ``steptable.toml`` near a run, the user's own in
``$XDG_CONFIG_HOME/steptable/schemas``, and those below a path a command was given. A file is read at most once per
change (by mtime and size) and never blocks (a FIFO of that name is an error, not a read)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from steptable.ingest.files.walk import walk
from steptable.schemas.userdoc import (
    LOCAL_DEPTH,
    LOCAL_NAME,
    MAX_SCHEMA_BYTES,
    SchemaFileError,
    _check_fields,
    _Doc,
    parse_doc,
)

#: the directories the command was given (a file's own directory for a file): a log directory's file above them is
#: not the user's (a steptable.toml planted in a shared /tmp or /scratch); None outside a command (the library)
_ROOTS: tuple[Path, ...] | None = None
#: the file ``--schema-file`` names: applies wherever it is, before the log directories' own
_NAMED: Path | None = None


def set_scope(paths: Sequence[str | os.PathLike[str]] | None, schema_file: str | os.PathLike[str] | None = None
              ) -> None:
    """Where log-directory files may apply from now on: at or below one of ``paths`` (the paths a command was
    given; None: up to LOCAL_DEPTH parents of a run, as for a library caller), plus ``schema_file`` wherever it is."""
    global _ROOTS, _NAMED
    roots = None if paths is None else [Path(p).absolute() for p in paths]
    _ROOTS = None if roots is None else tuple(r if os.path.isdir(r) else r.parent for r in roots)
    _NAMED = None if schema_file is None else Path(schema_file).absolute()


def named_file() -> Path | None:
    """The file ``--schema-file`` named, if any."""
    return _NAMED


def _in_scope(d: Path) -> bool:
    return _ROOTS is None or any(d == r or r in d.parents for r in _ROOTS)


def config_dir() -> Path:
    """The directory of the user's own schemas."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "steptable" / "schemas"


def schema_files(near: str | os.PathLike[str] | None = None) -> list[Path]:
    """User schema files that apply to runs at ``near``: the nearest log-directory file first, then the user's."""
    out = [_NAMED] if _NAMED is not None else []
    out += [f for f in _local_files(near) if f != _NAMED] if near is not None else []
    cfg = config_dir()
    if os.path.isdir(cfg):
        out += sorted(f for f in cfg.glob("*.toml") if os.path.isfile(f))
    return out


def _local_files(near: str | os.PathLike[str]) -> list[Path]:
    """The log directories' files at ``near``, nearest first."""
    out: list[Path] = []
    p = Path(near).absolute()  # (absolute: "." has no parents, and a steptable.toml above the current directory counts)
    start = p if os.path.isdir(p) else p.parent
    for d in [start, *list(start.parents)[:LOCAL_DEPTH]]:
        if not _in_scope(d):  # above the path the user gave: someone else's directory
            break
        f = d / LOCAL_NAME
        if os.path.lexists(f):  # a directory or FIFO of that name is an error to report, not to pass over
            out.append(f)  # (each of them: a nearer file that matches other runs does not hide a farther one)
    return out


def nearest_local(near: str | os.PathLike[str]) -> Path | None:
    """The log directory's file nearest to ``near`` (the one whose problems are reported), if there is one."""
    if _NAMED is not None:
        return _NAMED
    found = _local_files(near)
    return found[0] if found and found[0].parent != config_dir() else None


def _read(path: Path) -> _Doc:
    """The parsed document of ``path``. Raises SchemaFileError: not a regular file, too large, unreadable, not TOML."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read
            raise SchemaFileError(str(path), None, "not a regular file")
        if st.st_size > MAX_SCHEMA_BYTES:
            raise SchemaFileError(str(path), None, f"{st.st_size:,} bytes: larger than a schema file can be "
                                                   f"({MAX_SCHEMA_BYTES:,})")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SchemaFileError(str(path), None, f"cannot read the file ({e})") from None
    return parse_doc(str(path), text)



_CACHE: dict[Path, tuple[tuple[int, int], _Doc]] = {}


def read_doc(path: Path) -> _Doc:
    """The parsed document of the schema file at ``path`` (cached while its mtime and size stay). Raises
    SchemaFileError naming the file."""
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (-1, -1)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    doc = _read(path)
    _CACHE[path] = (stamp, doc)
    return doc


def files_below(root: Path) -> list[Path]:
    """The log directories' schema files under ``root`` (as discovery walks it), nearest first."""
    found = [f for f, _ in walk(root) if f.name == LOCAL_NAME and f.parent != root] if os.path.isdir(root) else []
    return sorted(found, key=lambda f: len(f.parts))


def compare_settings(near: str | os.PathLike[str]) -> dict[str, str]:
    """The ``[compare]`` table of the log-directory file nearest to ``near`` (``group``: the seed part of a run's
    name as a regular expression, ``x``: the x axis, ``baseline``: the baseline arm); {} without one. A table that
    cannot be used raises SchemaFileError (``<file>:<line>: ...``)."""
    for path in _local_files(near):
        doc = read_doc(path)
        table = doc.data.get("compare")
        if table is None:
            continue
        out = _check_fields(doc, "compare", table, None)
        if "group" in out:
            try:
                re.compile(out["group"])
            except re.error as e:
                doc.fail(f"[compare] group: not a regular expression ({e})", "compare", None, "group")
        return out
    return {}
