"""steptable.ingest.readers.wandblog: a record split over chunks is joined at its LAST part, with its FIRST part's
offset; a part whose start was lost is reported, not joined to the next record. (The framing of whole files is
tested with the reader, on files wandb wrote: test_wandb.py.)"""

from __future__ import annotations

from steptable.ingest.parse import BadLine
from steptable.ingest.readers.wandblog import FIRST, LAST, MIDDLE, RecordParts


def test_a_record_in_three_parts_is_joined_at_its_last_with_its_first_offset() -> None:
    parts, bad = RecordParts("run.wandb"), list[BadLine]()
    assert parts.add(FIRST, b"ab", 7, bad) is None and parts.add(MIDDLE, b"cd", 40, bad) is None
    assert parts.add(LAST, b"e", 32768, bad) == (b"abcde", 7)
    assert parts.waiting == [] and bad == []


def test_a_part_whose_start_was_lost_is_reported_and_the_next_record_is_whole() -> None:
    parts, bad = RecordParts("run.wandb"), list[BadLine]()
    assert parts.add(MIDDLE, b"xx", 100, bad) is None and parts.add(LAST, b"yy", 200, bad) is None
    assert [str(b) for b in bad] == [
        str(BadLine("run.wandb", 0, f"byte {at}: the rest of a record whose start was lost; skipped"))
        for at in (100, 200)
    ]
    parts.add(FIRST, b"a", 300, bad)
    parts.drop()  # (a damaged chunk: the open record is lost)
    assert parts.add(LAST, b"b", 400, bad) is None and len(bad) == 3
