"""`steptable tail`'s cursor as text: what ``--since`` takes and what the cursor line gives.

Forms (each read back as written):

- ``STEP``: every run's rows after STEP (a cursor typed by hand, or given where no row was at it).
- ``STEP:CELLS[:EDITS]``: one run alone (:class:`Mark`), as given before runs were named; still taken as it was.
- ``STEP:CELLS[:EDITS]@KEY``: one run, named by :func:`short_key` (3 characters): another run found next to it
  (a seed started after the cursor was taken) is served from its start, not from STEP.
- a token of several runs (:func:`encode`): base64url of each run's key and mark (its first character a letter).
  Why opaque: an agent passes it back verbatim on every poll and pays for it in tokens. Written out
  (``KEY=1200:14:3`` a run) a run costs ~9 o200k tokens; packed, ~4-5 bytes, about as many tokens: the runs go
  in the order of their steps, each run's step and cells written as the difference from the run before it (a
  run in step with it, or a few steps on, is one byte besides its key). Keys are 3 bytes of blake2b of the run's
  id (4 or more where two runs of the cursor would share them), so a run renamed or new is not taken for another
  (odds ~1 in 16.7M for each run the cursor holds), and the order of the runs does not matter. A 2-byte check
  refuses a token miscopied rather than serve from a wrong step.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CursorArg", "Mark", "Since", "cursor_line", "encode", "one_run", "parse", "short_key"]

KEY_BYTES = 3  # a run's key in a token of several runs (wider where two of them would share it)
KEY_CHARS = 3  # ... in one run's cursor (18 bits)
_VERSION = 0x10  # the token's first byte: version 1 in the high nibble, the key width in the low one (its first
# character is then E to H: a letter, where a step starts with a digit or '-')
_CHECK = 2  # bytes of blake2b of the rest, at the token's end


@dataclass(frozen=True)
class Mark:
    """Where a run was left: its rows up to ``step`` were served; its row at ``step`` then held ``cells`` cells (0:
    there was none), and ``edits`` changes to its earlier rows had been counted (RunStore.earlier_changes). None:
    not known (a plain STEP)."""

    step: int
    cells: int | None = None
    edits: int | None = None


@dataclass(frozen=True)
class Since:
    """A ``--since`` cursor: one step (``step``, with ``cells`` and ``edits`` of one run's row, and ``key`` where
    that run is named) or the marks of several runs (``marks``, by key of ``width`` bytes). ``text``: as given."""

    text: str
    step: int | None = None
    cells: int | None = None
    edits: int | None = None
    key: str | None = None
    marks: Mapping[bytes, Mark] | None = None
    width: int = KEY_BYTES

    def mark(self, run: str, alone: bool) -> Mark | None:
        """The mark of ``run`` (None: not in the cursor, served from its start). A step without a run named is
        every run's; its cells and edits only where one run is chosen (``alone``: they are of one run's rows)."""
        if self.marks is not None:
            return self.marks.get(_digest(run, self.width))
        assert self.step is not None
        if self.key is not None:
            return Mark(self.step, self.cells, self.edits) if short_key(run) == self.key else None
        return Mark(self.step, self.cells if alone else None, self.edits if alone else None)

    @property
    def named(self) -> bool:
        """The cursor names its runs: a run not in it is new to it."""
        return self.marks is not None or self.key is not None


def _digest(run: str, width: int) -> bytes:
    return hashlib.blake2b(run.encode("utf-8", "surrogatepass"), digest_size=16).digest()[:width]


def short_key(run: str) -> str:
    """One run's key in its cursor: :data:`KEY_CHARS` base64url characters of blake2b of its id."""
    return base64.urlsafe_b64encode(_digest(run, 3)).decode()[:KEY_CHARS]


def one_run(run: str, mark: Mark) -> str:
    """``STEP:CELLS[:EDITS]@KEY`` (EDITS left out when 0), or ``STEP`` where the mark has no cells."""
    if not mark.cells:
        return str(mark.step)
    edits = f":{mark.edits}" if mark.edits else ""
    return f"{mark.step}:{mark.cells}{edits}@{short_key(run)}"


def encode(marks: Sequence[tuple[str, Mark]]) -> str:
    """The token of ``marks`` (run id, mark with cells and edits known). See the module's docstring."""
    width = KEY_BYTES
    while len({_digest(r, width) for r, _ in marks}) < len(marks) and width < 15:
        width += 1  # (two runs' keys alike: a wider key for all)
    out = bytearray([_VERSION | width])
    prev_step = prev_cells = 0
    # (by step: the difference from the run before is small, a byte, for runs near each other as well as in step)
    for run, m in sorted(marks, key=lambda rm: (rm[1].step, rm[1].cells or 0, rm[0])):
        cells, edits = m.cells or 0, m.edits or 0
        out += _digest(run, width)
        _varint(out, _zigzag(m.step - prev_step) << 2 | (cells != prev_cells) << 1 | (edits != 0))
        if cells != prev_cells:
            _varint(out, _zigzag(cells - prev_cells))
        if edits:
            _varint(out, edits)
        prev_step, prev_cells = m.step, cells
    out += hashlib.blake2b(bytes(out), digest_size=_CHECK).digest()
    return base64.urlsafe_b64encode(bytes(out)).decode().rstrip("=")


def parse(text: str) -> Since:
    """The cursor ``text`` (any form of the module's docstring); ValueError where it is none."""
    if text[:1].isalpha():
        return _decode(text)
    head, at, key = text.partition("@")
    step, *counts = head.split(":")
    if len(counts) > 2 or (at and (not counts or len(key) != KEY_CHARS or not _b64ok(key))):
        raise ValueError(text)
    nums = [int(c) for c in counts]
    if any(c < 0 for c in nums):
        raise ValueError(text)
    cells, edits = (nums[0], nums[1] if len(nums) > 1 else 0) if nums else (None, None)
    return Since(text, int(step), cells, edits, key if at else None)


class CursorArg(argparse.Action):
    """argparse action of tail's ``--since``: sets ``args.since`` to the :class:`Since` of the text (:func:`parse`)."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        try:
            namespace.since = parse(str(values))
        except ValueError:
            raise argparse.ArgumentError(
                self, f"not a cursor (STEP, STEP:CELLS or STEP:CELLS:EDITS), nor one tail gave: {values!r}") from None


def _b64ok(s: str) -> bool:
    return all(c.isascii() and (c.isalnum() or c in "-_") for c in s)


def _decode(text: str) -> Since:
    if not _b64ok(text):
        raise ValueError(text)
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError(text) from None
    if base64.urlsafe_b64encode(raw).decode().rstrip("=") != text:  # (bits past the last byte: not as written)
        raise ValueError(text)
    body, check = raw[:-_CHECK], raw[-_CHECK:]
    if len(raw) <= _CHECK or hashlib.blake2b(body, digest_size=_CHECK).digest() != check:
        raise ValueError(text)
    if body[0] & 0xF0 != _VERSION or not KEY_BYTES <= (width := body[0] & 0x0F):
        raise ValueError(text)
    marks: dict[bytes, Mark] = {}
    i, step, cells = 1, 0, 0
    while i < len(body):
        key, i = body[i : i + width], i + width
        tag, i = _read_varint(body, i)
        step += _unzigzag(tag >> 2)
        if tag & 2:
            d, i = _read_varint(body, i)
            cells += _unzigzag(d)
        edits = 0
        if tag & 1:
            edits, i = _read_varint(body, i)
        if len(key) < width or key in marks or cells < 0:
            raise ValueError(text)
        marks[key] = Mark(step, cells, edits)
    return Since(text, marks=marks, width=width)


def _zigzag(n: int) -> int:
    return n * 2 if n >= 0 else -n * 2 - 1


def _unzigzag(n: int) -> int:
    return n // 2 if n % 2 == 0 else -(n + 1) // 2


def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)


def _read_varint(b: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if i >= len(b) or shift > 70:  # (a cut token; a step past 2**70 is not one of a training's)
            raise ValueError("cut")
        n |= (b[i] & 0x7F) << shift
        i += 1
        if b[i - 1] < 0x80:
            return n, i
        shift += 7


def cursor_line(cursor: str | None, short_of: tuple[int, bool] | None = None, runs: int = 1) -> str:
    """The line that gives the cursor after a one-shot tail (given once: a token of many runs is long). ``runs``:
    how many it is of, said where several. ``short_of``: (the runs' last step, whether they all ended) where the
    cursor given is past it (Tail.short_of), said after it."""
    if cursor is None:
        return "steptable tail: no rows yet: cursor none (leave out --since next time)\n"
    past = ""
    if short_of is not None:
        last, ended = short_of
        past = f"; no run has a step past {last}" + (", and every run has ended" if ended else "")
    of = f"of {runs} runs; " if runs > 1 else ""
    return f"steptable tail: cursor {cursor} ({of}--since it prints what follows{past})\n"
