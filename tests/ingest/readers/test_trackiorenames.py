"""A trackio run renamed by trackio's own API while it is followed (steptable.ingest.readers.trackiorenames): trackio
writes its rows again under the new name, with new ids; they are no new rows. The databases are written, and the
runs renamed, by trackio itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.ingest.files.follow import Follower
from steptable.ingest.readers.trackiotraces import table_rows
from tests.ingest.writers import rows_of, trackio_rename, trackio_rows

pytest.importorskip("trackio")


def test_a_run_renamed_while_followed_keeps_its_rows_once_and_takes_the_new_name(tmp_path: Path) -> None:
    """Read as new rows, the copies were a resume at step 0 and every row again, under the old name; now the run
    holds each row once, is shown by its new name (its traces and tables looked up by it), and rows logged to it
    after are read."""
    trackio_rows(tmp_path, "before", range(6))
    trackio_rows(tmp_path, "other", range(3))
    f = Follower([tmp_path])
    f.scan()
    runs = {st.arm: st for st in f.stores.values()}
    store = runs["before"]
    assert list(store.steps) == list(range(6))
    trackio_rename(tmp_path, "before", "after")
    f.scan()
    assert list(store.steps) == list(range(6)) and not store.resumes and not store.bad
    assert store.arm == "after" and store.meta["trackio_run"] == "after"
    (db,) = tmp_path.glob("*.db")
    row, key, step = store.meta["trackio_tables"][-1]  # (the table's row now: its id is new)
    assert (key, step) == ("gens", 2) and table_rows(db, row) == [{"prompt": "q2"}]
    trackio_rows(tmp_path, "after", range(6, 9), resume="must")
    f.scan()
    assert list(store.steps) == list(range(9)) and not store.resumes
    assert [r["loss"] for r in rows_of(store)] == [1.0 / (s + 1) for s in range(9)]
    assert sorted(st.arm for st in f.stores.values()) == ["after", "other"]
    assert list(runs["other"].steps) == [0, 1, 2]
