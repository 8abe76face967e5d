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


def _lagged_rows() -> list[dict[str, object]]:
    """Training rows at even steps; each evaluation lands two rows late (tinker's asynchronous evaluation), one is
    logged right after its own row (merged into the last row), a late writer's row is inserted at step 5, and the run
    resumes at step 16 (its loss logged again) and goes on to 20."""
    rows: list[dict[str, object]] = []
    for s in range(0, 24, 2):
        rows.append({"step": s, "loss": 1 - s / 100})
        if s >= 4 and s % 8 == 4:
            rows.append({"step": s - 4, "eval/acc": s / 100})
        if s == 10:
            rows += [{"step": 10, "eval/acc": 0.5}, {"step": 5, "loss": 0.95}]
    return rows + [{"step": s, "loss": 2 - s / 100} for s in range(16, 21, 2)]


def test_earlier_changes_are_numbered_alike_whatever_chunks_the_file_is_read_in() -> None:
    """A cursor names the changes it has seen by their count: a read of the whole file at once and one of a line at a
    time must count the same changes (a merge into the last row is none: read with its row it is no merge at all)."""
    from steptable.ingest import RunStore
    from tests.ingest.helpers import add_untimed

    whole, lines = RunStore("r", "r.jsonl"), RunStore("r", "r.jsonl")
    add_untimed(whole, _lagged_rows())
    for row in _lagged_rows():
        add_untimed(lines, [row])
    for store in (whole, lines):
        assert store.earlier_changes.count == 5
        assert store.earlier_changes.since(0, 100) == (16, None, [0, 5, 8, 16])  # (the eval of 16: at 20)
        assert store.earlier_changes.since(3, 100) == (16, None, [16])
        assert store.earlier_changes.since(3, 15) == (None, None, [])  # (at or before step 15: none since the third)


def test_earlier_changes_too_many_to_keep_say_from_where_every_row_may_have_changed() -> None:
    from steptable.ingest.edits import EarlierChanges

    changes = EarlierChanges(2)
    for step, resumed in ((5, False), (3, True), (8, False)):
        changes.note(step, resumed)
    assert changes.count == 3
    assert changes.since(0, 10) == (3, 5, [8])  # the first one is no longer kept: from step 5 on, every row
    assert changes.since(1, 10) == (3, None, [8])
    assert changes.since(2, 7) == (None, None, [])
