"""Files a StepLogger writes whole beside its rows (``steptable.json``, ``table.txt``): a reader sees the old file
or the new one, never half of one."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from steptable.table import runinfo

_UMASK = os.umask(0)  # read once, at import (os.umask can only be read by setting it)
os.umask(_UMASK)
DEFAULT_MODE = 0o666 & ~_UMASK


def replace_whole(path: Path, fill: Callable[[TextIO], None], mode: int = DEFAULT_MODE) -> None:
    """Write ``path`` whole: ``fill`` writes a temporary file beside it (made 0600, then given ``mode``), which then
    replaces ``path`` by a rename. The temporary name is chosen before the file exists (not by mkstemp), so an
    interrupt anywhere, even right after the file was made, leaves no stray file. Raises OSError, and what ``fill``
    raises (``path`` is then untouched). FileExistsError: another writer's temporary file of the same name, never
    ours to remove."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            fill(f)
        os.replace(tmp, path)
    except FileExistsError:
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)  # (not made yet, or renamed already: nothing to remove)
        raise


def write_description(run_dir: Path, info: dict[str, Any]) -> Path:
    """Write the run description ``info`` (steptable.table.runinfo.describe) to its file in ``run_dir``, readable by
    whoever can read the run's rows (the JSONL's permissions). Raises OSError."""
    path = run_dir / runinfo.file_name(info.get("arm"))
    try:
        mode = os.stat(run_dir / str(info.get("jsonl") or "metrics.jsonl")).st_mode & 0o666
    except OSError:
        mode = DEFAULT_MODE
    replace_whole(path, lambda f: json.dump(info, f, ensure_ascii=False, allow_nan=False), mode)
    return path
