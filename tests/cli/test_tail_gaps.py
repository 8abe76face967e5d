"""Rows lost for good under ``tail -f`` (a file replaced before the follower read its rest): said in-band in every
format, and on stderr."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from steptable.cli.tailformats import GAP_KIND
from tests.cli.helpers import Live, finish, start_follow
from tests.helpers import readline_within, reap, write_rows

WORDS = "rows lost: steps 10-19"


def replace_with(path: Path, steps: range) -> None:
    """A new file renamed over ``path`` (the old one, with the rows after those read, is gone)."""
    new = path.with_name("incoming")
    write_rows(new, ({"step": s, "loss": 1 / (s + 1)} for s in steps))
    os.replace(new, path)


def live_gap(tmp_path: Path, fmt: str) -> tuple[str, str]:
    """``tail -f --format FMT``: rows 0-9 read, then the file replaced by one that starts at step 20."""
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, ({"step": s, "loss": 1 / (s + 1)} for s in range(10)))
    live = Live(tmp_path / "run", ["--format", fmt])
    live.step()
    replace_with(path, range(20, 25))
    live.step()
    return live.out.getvalue(), live.err.getvalue()


def test_text_says_the_gap_in_a_notice_line_between_the_rows(tmp_path: Path) -> None:
    out, err = live_gap(tmp_path, "text")
    lines = out.splitlines()
    (notice,) = [x for x in lines if WORDS in x]
    assert notice.startswith("── ") and "metrics.jsonl" in notice and "after byte" in notice
    after = lines[lines.index(notice) + 1 :]
    assert after[0].split()[0] == "step" and after[1].split()[0] == "20"  # a header again, then the new rows
    assert WORDS in err


def test_jsonl_says_the_gap_in_one_object_of_its_own_kind_without_a_step(tmp_path: Path) -> None:
    out, err = live_gap(tmp_path, "jsonl")
    recs = [json.loads(x) for x in out.splitlines()]
    gaps = [r for r in recs if r.get("kind") == GAP_KIND]
    assert len(gaps) == 1 and "step" not in gaps[0]
    assert (gaps[0]["after_step"], gaps[0]["before_step"]) == (9, 20) and gaps[0]["file"].endswith("metrics.jsonl")
    assert gaps[0]["after_byte"] > 0 and WORDS in gaps[0]["message"]
    assert [r["step"] for r in recs if r.get("kind") != GAP_KIND] == [*range(10), *range(20, 25)]
    assert recs.index(gaps[0]) == 10 and WORDS in err


def test_csv_says_the_gap_in_a_comment_line_csv_readers_skip(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    out, err = live_gap(tmp_path, "csv")
    (notice,) = [x for x in out.splitlines() if x.startswith("#")]
    assert WORDS in notice and next(csv.reader([notice])) == [notice]  # one field, nothing quoted
    frame = pd.read_csv(io.StringIO(out), comment="#")
    assert list(frame["step"]) == [*range(10), *range(20, 25)] and WORDS in err


def test_md_says_the_gap_between_two_tables_that_stay_tables(tmp_path: Path) -> None:
    out, err = live_gap(tmp_path, "md")
    lines = out.splitlines()
    (notice,) = [x for x in lines if WORDS in x]
    at = lines.index(notice)
    assert notice.startswith("> ") and lines[at - 1] == ""  # a blank line ends the table before the quote
    rest = [x for x in lines[at + 1 :] if x.startswith("|")]
    assert rest[0].startswith("| step") and set(rest[1]) <= set("|-: ") and rest[2].startswith("| 20 ")
    assert WORDS in err


def test_tail_f_says_a_gap_when_the_file_is_truncated_and_rewritten_before_it_reads_it(tmp_path: Path) -> None:
    """The whole command: a file that grows by rows 10-19 and is truncated and written again from step 20 within
    one poll."""
    path = tmp_path / "metrics.jsonl"
    write_rows(path, ({"step": s, "loss": 1.0} for s in range(10)))
    p = start_follow("--format", "jsonl", "--poll", "1", str(path))
    try:
        assert p.stdout is not None
        for _ in range(10):
            assert readline_within(p.stdout, 20)
        with open(path, "r+", encoding="utf-8") as f:
            f.seek(0, os.SEEK_END)
            f.write("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(10, 20)))
            f.flush()
            f.seek(0)
            f.truncate()
            f.write("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(20, 23)))
        got = [json.loads(str(readline_within(p.stdout, 20))) for _ in range(4)]
        p.terminate()
        _, err = finish(p)
    finally:
        reap(p)
    assert got[0]["kind"] == GAP_KIND and (got[0]["after_step"], got[0]["before_step"]) == (9, 20)
    assert [r["step"] for r in got[1:]] == [20, 21, 22] and WORDS in err
