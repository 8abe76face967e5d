"""Media values in trackio rows (steptable.ingest.readers.trackiomedia): an image, a table, a histogram logged in the
same ``trackio.log`` call as a metric are no columns of the run, and the table is offered as the step's
generations. The databases are written by trackio itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.ingest.readers.trackiotraces import table_rows
from tests.ingest import writers
from tests.ingest.writers import only, read_once, rows_of

pytest.importorskip("trackio")


def test_media_logged_beside_a_metric_are_left_out_of_its_row_and_its_table_offered(tmp_path: Path) -> None:
    """The media's fields read as columns (``file_path``, ``caption``, ``bins``, ``sample/_type``...) where the row
    held a metric besides; now its row holds the metric alone, and its table is noted at its step as one logged
    alone is. The text of a media type inside a string is a string."""
    writers.run_writer("""
        import numpy as np, trackio
        trackio.init(project="proj", name="media")
        for s in range(3):
            trackio.log({"loss": 1.0 / (s + 1),
                         "sample": trackio.Image(np.zeros((4, 4, 3), dtype=np.uint8), caption=f"step {s}"),
                         "gens": trackio.Table(columns=["prompt", "completion"], data=[[f"p{s}", f"c{s}"]]),
                         "hist": trackio.Histogram(np.arange(10) * s)}, step=s)
        trackio.log({"gens": trackio.Table(columns=["prompt", "completion"], data=[["p3", "c3"]])}, step=3)
        trackio.log({"loss": 0.2, "note": '"_type":"trackio.image"'}, step=4)
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    store = only(read_once(tmp_path))
    rows = rows_of(store)
    assert list(store.steps) == [0, 1, 2, 4] and not store.bad
    assert {k for r in rows for k in r} == {"loss", "note", "step", "_timestamp"}
    assert rows[3]["note"] == '"_type":"trackio.image"'
    assert [r["loss"] for r in rows] == [1.0, 0.5, 1.0 / 3, 0.2]
    tables = store.meta["trackio_tables"]
    assert [(key, step) for _, key, step in tables] == [("gens", s) for s in range(4)]
    (db,) = tmp_path.glob("*.db")
    assert [table_rows(db, row)[0]["prompt"] for row, _, _ in tables] == ["p0", "p1", "p2", "p3"]

