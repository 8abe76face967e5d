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


def test_changes_no_longer_listed_are_told_from_the_lowest_step_changed_after_the_cursor() -> None:
    """A cursor taken after the changes at steps 0-99 (late evaluations), then 5,898 more at steps 100 on, of which
    4,096 are listed: what changed after it is from step 100 on, not from step 0 (the lowest of every change no
    longer listed, those the cursor had seen among them: the whole run served again)."""
    from steptable.ingest.edits import EarlierChanges

    changes = EarlierChanges(4096)
    for step in range(6000):
        changes.note(step, False)
    resumed, lost, listed = changes.since(100, 101)
    assert resumed is None and listed == [] and lost is not None and 90 <= lost <= 100  # (256 pairs kept: ~8 apart)
    assert changes.since(100, 80) == (None, None, [])
    assert changes.since(6000 - 4096, 10_000)[1] is None  # (every change after it listed)


def test_the_lowest_step_changed_after_a_cursor_is_never_above_the_truth() -> None:
    """Random changes (resumes among them) past what is listed and past the pairs kept of the rest: for every cursor
    the lowest step told is at most the lowest step changed after it (no row missed), and exact while the pairs kept
    hold every change no longer listed (past them it may tell a change at or before the cursor's step where none
    is: rows served again, none missed)."""
    import random

    from steptable.ingest import edits

    rng = random.Random(4)
    for cap in (4, 10_000):
        edits_kept, edits.LOST_KEPT = edits.LOST_KEPT, cap
        try:
            changes = edits.EarlierChanges(16)
        finally:
            edits.LOST_KEPT = edits_kept
        made: list[tuple[int, bool]] = []
        for _ in range(400):
            made.append((rng.randrange(200), rng.random() < 0.1))
            changes.note(*made[-1])
        for n in range(0, 400, 7):
            upto = rng.randrange(250)
            resumed, lost, steps = changes.since(n, upto)
            after = [(s, r) for s, r in made[n:] if s <= upto]
            told = min([x for x in (resumed, lost, *steps) if x is not None], default=None)
            truth = min((s for s, _ in after), default=None)
            assert truth is None or (told is not None and told <= truth), (n, upto)
            if cap > 400:
                assert told == truth, (n, upto)
