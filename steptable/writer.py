"""RunWriter: append raw rows to ``<run_dir>/metrics.jsonl`` as strict JSON, never raising into the training loop.

Each row is one line written with a single write call and flushed, so a crash leaves at most one partial last line.
Non-finite floats are written as ``null`` (RFC 8259 has no NaN). Rows that cannot be written (disk full, permission,
a vanished directory) are kept and retried on the next row and at close; the failure is reported once.
"""

from __future__ import annotations

import json
import math
import os
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

#: rows kept for retry while the file cannot be written; beyond this the oldest are dropped (and counted)
MAX_PENDING = 100_000


#: nesting deeper than this (or a container that holds itself) is written as text
MAX_DEPTH = 32


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a hostile __str__/__repr__, or an int past str()'s digit limit
        return f"<unprintable {type(value).__name__}>"


def jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-safe copy of a raw value: non-finite -> None, tuples -> lists, scalars of numpy/torch -> float,
    anything else -> its text. Never raises: one odd value must not cost the row its other metrics."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if value.bit_length() <= 1000:
            return value
        try:  # json.dumps cannot write an int past str()'s digit limit; a 300-digit count is a bug anyway
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if _depth >= MAX_DEPTH:
        return _text(value)
    if isinstance(value, Mapping):
        try:
            items = list(value.items())
        except Exception:
            return _text(value)
        return {_text(k): jsonable(v, _depth + 1) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, _depth + 1) for v in value]
    try:
        item = getattr(value, "item", None)
    except Exception:  # a proxy whose __getattr__ raises something other than AttributeError
        item = None
    if callable(item):  # numpy / torch 0-d: the caller chose to hand us a tensor; .item() is its sync, not ours
        try:
            return jsonable(item(), _depth + 1)
        except Exception:
            pass
    try:
        return jsonable(float(value), _depth + 1)
    except Exception:
        return _text(value)


def encode_row(record: Mapping[str, Any]) -> bytes:
    """One strict-JSON line (with its newline)."""
    text = json.dumps(jsonable(record), allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "replace") + b"\n"


class RunWriter:
    """Appends rows to one JSONL file; reports I/O failures through ``warn`` once per failure episode."""

    def __init__(self, path: str | os.PathLike[str], warn: Callable[[str], None]) -> None:
        self.path = Path(path)
        self._warn = warn
        self._fh: BinaryIO | None = None
        self._pending: deque[bytes] = deque()
        self.dropped = 0
        self.written = 0
        self._failing: str | None = None
        self._encode_reported = False

    @property
    def pending(self) -> int:
        return len(self._pending)

    def write(self, record: Mapping[str, Any]) -> bool:
        """Queue one row and write everything queued. True when nothing is left pending."""
        try:
            line = encode_row(record)
        except Exception as e:  # jsonable() leaves nothing json.dumps refuses; this is the last guard
            if not self._encode_reported:
                self._encode_reported = True
                self._warn(f"a row could not be encoded ({e!r}); skipped (reported once)")
            return not self._pending
        if len(self._pending) >= MAX_PENDING:
            self._pending.popleft()
            self.dropped += 1
        self._pending.append(line)
        return self.flush()

    def flush(self) -> bool:
        """Try to write every pending row. Never raises."""
        while self._pending:
            try:
                fh = self._open()
                data = self._pending[0]
                n = fh.write(data)  # unbuffered: one write(2) per row
                if n is None or n < len(data):
                    # A short write (rare: a full disk can cut a row). Keep the rest, so the line completes later.
                    self._pending[0] = data[n or 0 :]
                    raise OSError(f"short write ({n or 0} of {len(data)} bytes)")
                self._pending.popleft()
                self.written += 1
            except (OSError, ValueError) as e:
                self._close_fh()
                self._fail(f"cannot write {self.path} ({e}); {len(self._pending)} row(s) kept for retry")
                return False
        if self._failing is not None:
            self._failing = None
            self._warn(f"writing {self.path} works again; late rows written" + self._dropped_note())
        return True

    def _dropped_note(self) -> str:
        return f", {self.dropped} oldest row(s) dropped while it failed" if self.dropped else ""

    def _fail(self, text: str) -> None:
        if self._failing is None:
            self._failing = text
            self._warn(text)

    def _open(self) -> BinaryIO:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab", buffering=0)
        return self._fh

    def _close_fh(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:
                pass
            self._fh = None

    def close(self) -> None:
        self.flush()
        if self._pending:
            self._warn(f"{len(self._pending)} row(s) could not be written to {self.path}" + self._dropped_note())
        self._close_fh()
