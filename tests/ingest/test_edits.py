"""steptable.ingest.edits: rows changed in place move the change mark viewers redraw by."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import grpo_rows, write_rows
from tests.ingest.helpers import followed


def test_an_edit_changes_the_mark_the_app_redraws_by(tmp_path: Path) -> None:
    """The app's grid keeps rows it drew until the store's change mark moves: a late row merged in must move it."""
    from steptable.app.model import change_mark

    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, grpo_rows(range(5)))
    fol, store = followed(tmp_path)
    before = change_mark(store)
    write_rows(path, [{"step": 2, "eval/acc": 0.5}])
    fol.scan()
    assert change_mark(store) != before and store.value(2, "eval/acc") == 0.5
