"""A run's small side files: ``read_regular`` (a whole small file, never a FIFO or a device) and ``load_meta`` (the
run's ``config.json``, or a Ray Tune trial's ``params.json``, into its store's ``meta``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from steptable.ingest.files.beside import RAY_PARAMS, RAY_RESULT
from steptable.ingest.files.discover import Candidate
from steptable.ingest.files.regular import open_regular
from steptable.ingest.parse import BadLine
from steptable.ingest.store import RunStore
from steptable.table import sidejson
from steptable.table.sidejson import SideFileError

MAX_META = 4 * 1024 * 1024


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """A whole small file. OSError for anything but a regular file (a FIFO would block the read, a device such as
    /dev/zero never end it: it is opened without blocking and checked before a byte is read) or one over ``limit``."""
    with open_regular(path) as f:
        st = os.fstat(f.fileno())
        if st.st_size > limit:
            raise OSError(0, f"{st.st_size / 1e6:.0f} MB: too large to read whole", str(path))
        data = f.read(limit + 1)
    if len(data) > limit:  # grew meanwhile
        raise OSError(0, "too large to read whole", str(path))
    return data


def load_meta(store: RunStore, cand: Candidate, report: Callable[[BadLine], None] | None = None) -> None:
    """``config.json`` next to the metrics file or in the run directory (tinker writes one), or a Ray Tune trial's
    ``params.json`` beside its ``result.json`` -> ``meta["config"]``.

    The file is untrusted: one too large or nested too deep is told through ``report`` (one line naming it) and left
    out; the run is read all the same. Invalid JSON is passed over quietly (a config being rewritten)."""
    places = [d / "config.json" for d in dict.fromkeys((Path(cand.path.parent), Path(cand.run_dir)))]
    if cand.path.name == RAY_RESULT:
        places.append(cand.path.parent / RAY_PARAMS)
    for path in places:
        try:
            data = read_regular(path, MAX_META)
        except FileNotFoundError:
            continue
        except OSError as e:
            if report is not None and e.errno == 0:  # ours: not a regular file, too large
                report(BadLine(str(path), 0, f"config not read: {e.strerror}"))
            continue
        try:
            store.meta["config"] = sidejson.load(data)
        except SideFileError as e:
            if "nested" in str(e):
                store.meta["config_refused"] = path  # (not read again on every pass of discovery)
                if report is not None:
                    report(BadLine(str(path), 0, f"config {e}"))
                return
            continue
        store.meta["config_path"] = path
        return
