"""steptable.ingest.readers.trackerlists: a tracker's list values as their text, in rows and in columns (the
readers' tests read W&B's and trackio's own files: test_wandb.py, test_trackio.py)."""

from __future__ import annotations

from steptable.ingest.parse import MISSING
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.trackerlists import lists_as_text


def test_list_cells_become_their_json_text_and_other_cells_stay() -> None:
    numbers = (1.0, 2.0)
    cols = {"loss": numbers, "counts": [(3, 4), MISSING], "mixed": ["a", ["x", 1.5, None]], "flag": [True, False]}
    got = lists_as_text(Parsed(steps=[0, 1], cols=dict(cols)))
    assert got.cols is not None and got.cols["loss"] is numbers and got.cols["flag"] == [True, False]
    assert got.cols["counts"] == ["[3, 4]", MISSING] and got.cols["mixed"] == ["a", '["x", 1.5, null]']
    rows = lists_as_text(Parsed(steps=[0], rows=[{"lr": [0.001, 0.0001], "n": 3, "t": "é"}])).rows
    assert rows == [{"lr": "[0.001, 0.0001]", "n": 3, "t": "é"}]
