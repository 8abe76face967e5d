"""What :class:`~steptable.ingest.files.tail.FileTail` yields: complete lines, a reset, the news that bytes may be
lost (and bad lines, :class:`~steptable.ingest.parse.BadLine`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from steptable.ingest.parse import BadLine

if TYPE_CHECKING:
    from steptable.ingest.files.tail import FileTail


@dataclass(slots=True)
class Lines:
    """Complete lines (ending with a newline) starting at byte ``offset`` of the file."""

    data: bytes
    offset: int
    tail: FileTail

    def first_line(self) -> int:
        """1-based number of the first line, counted on demand: a chunk that parses cleanly never needs it."""
        return self.tail.line_at(self.offset) + 1


class Reset:
    """Yielded first when the file must be read again from the start. ``in_place``: the same file, no shorter, with
    bytes already read changed (a writer that writes it again over itself, as SB3 does its CSV: read midway, it is
    part new lines, part old ones); else it was truncated or replaced (what is read is the new content so far)."""

    __slots__ = ("in_place",)

    def __init__(self, in_place: bool) -> None:
        self.in_place = in_place

    def __repr__(self) -> str:
        return "RESET_IN_PLACE" if self.in_place else "RESET"


RESET = Reset(False)
RESET_IN_PLACE = Reset(True)


@dataclass(frozen=True, slots=True)
class Lost:
    """Yielded when the file we were reading went before its end was known to be read (``reason``: deleted,
    replaced, truncated) and no file beside it holds the rest: bytes after ``offset`` may be lost (the rows read next
    tell; steptable.ingest.gaps)."""

    offset: int
    reason: str


TailEvent = Lines | BadLine | Reset | Lost
