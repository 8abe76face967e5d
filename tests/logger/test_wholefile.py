"""steptable.logger.wholefile: steptable.json and table.txt are written whole (a reader sees the old file or the new
one), with the permissions of the run's rows, and a failed or interrupted write leaves no temporary file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

import pytest

from steptable.logger.wholefile import replace_whole, write_description
from tests.logger.helpers import CUSTOM_COLS, log_rows


def test_the_description_is_as_readable_as_the_rows(tmp_path: Path) -> None:
    log_rows(tmp_path / "r", CUSTOM_COLS, [{"step": 0, "reward/mean": 0.5}])
    rows, info = tmp_path / "r" / "metrics.jsonl", tmp_path / "r" / "steptable.json"
    assert info.stat().st_mode & 0o777 == rows.stat().st_mode & 0o666  # (a 0600 file would hide it from a teammate)


@pytest.mark.parametrize("error", [RuntimeError("fill failed"), KeyboardInterrupt()])
def test_a_fill_that_raises_leaves_the_old_file_and_no_temporary(tmp_path: Path, error: BaseException) -> None:
    path = tmp_path / "table.txt"
    path.write_text("old\n")

    def fill(f: TextIO) -> None:
        f.write("half of the new")
        raise error

    with pytest.raises(type(error)):
        replace_whole(path, fill)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["table.txt"]


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="needs fchmod")
def test_the_new_file_replaces_the_old_with_the_mode_given(tmp_path: Path) -> None:
    path = tmp_path / "table.txt"
    path.write_text("old\n")
    replace_whole(path, lambda f: f.write("new\n"), mode=0o640)
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["table.txt"]


def test_the_description_of_a_named_arm_goes_to_its_own_file(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text("")
    path = write_description(tmp_path, {"arm": "routeA", "version": 1})
    assert path == tmp_path / "steptable.routeA.json" and path.read_text() == '{"arm": "routeA", "version": 1}'
