"""The one run a training resumed in a new logger directory is read as, followed live (steptable.ingest.joined): a
resume found while followed, validation rows merged into the resumed piece, rows before its first step, alerts of
the rows it replaced, its first row held back. Every file is written by Lightning's own CSVLogger."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files.follow import Follower
from steptable.ingest.joined import Joiner
from tests.helpers import run_cli
from tests.ingest.writers import read_once, sine_csv
from tests.library_logs import write_lightning_rows

pytest.importorskip("lightning")


def test_a_resume_begun_while_followed_joins_the_run_shown(tmp_path: Path) -> None:
    sine_csv(tmp_path / "arm" / "version_0", range(0, 10))
    f = Follower([tmp_path])
    f.scan()
    (before,) = f.stores.values()
    shown = (before.generation, before.version)

    sine_csv(tmp_path / "arm" / "version_1", range(8, 12), 3.0)
    changed = f.scan()
    (run,) = f.stores.values()
    assert changed == {before.run} and run.run == before.run and run is not before
    assert run.last_update == (tmp_path / "arm" / "version_1" / "metrics.csv").stat().st_mtime  # (not version_0's)
    # a reader that knows the run by its id sees a resume at step 8: the rows before it are those it showed
    assert run.generation == shown[0] and run.version > shown[1]
    assert list(run.steps) == list(range(12)) and run.resumes == [8]
    assert run.value(8, "loss") == pytest.approx(3 * (1 + math.sin(8)))

    # the resumed process logs on: rows added to the same run, which only grows
    gen = run.generation
    sine_csv(tmp_path / "arm" / "version_1", range(8, 15), 3.0)
    assert f.scan() == {before.run}
    (again,) = f.stores.values()
    assert again is run and run.generation == gen and list(run.steps) == list(range(15))
    assert run.value(14, "loss") == pytest.approx(3 * (1 + math.sin(14)))


def test_a_training_no_longer_in_pieces_shows_its_first_piece_as_a_reset(tmp_path: Path) -> None:
    sine_csv(tmp_path / "arm" / "version_0", range(0, 10))
    sine_csv(tmp_path / "arm" / "version_1", range(10, 12))
    runs = read_once(tmp_path)._runs
    joiner = Joiner()
    shown, piece_of, changed = joiner.view(runs)
    (first, second) = runs
    assert list(shown) == [first] and piece_of == {first: first, second: first} and changed == {first}
    assert joiner.view(runs) == (shown, piece_of, set())  # (nothing new: the same run, unchanged)

    alone = {first: runs[first]}  # (the resumed piece's file gone)
    gen = runs[first].generation
    assert joiner.view(alone) == (alone, {}, {first})
    assert runs[first].generation > gen and len(runs[first]) == 10


def _same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    def norm(r: dict[str, Any]) -> dict[str, Any]:
        return {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
    return [norm(r) for r in got] == [norm(r) for r in want]


def test_the_joined_run_holds_each_pieces_cells_as_its_own_run_does(tmp_path: Path) -> None:
    # absent cells (a validation every 5th step), a NaN, integer columns: cell for cell, types included
    def rows(steps: range, scale: float) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"loss": math.nan if s == 7 else scale * s, **({"val_loss": scale} if s % 5 == 0 else {}),
                     "epoch": s // 4}) for s in steps]
    write_lightning_rows(tmp_path / "arm" / "version_0", rows(range(0, 12), 1.0))
    write_lightning_rows(tmp_path / "arm" / "version_1", rows(range(10, 22), 2.0))
    v0, v1 = (read_once(tmp_path / "arm" / f"version_{v}") for v in (0, 1))
    (first,), (second,) = v0.stores.values(), v1.stores.values()
    (run,) = read_once(tmp_path).stores.values()
    want = [r for r in first.rows() if r["step"] < 10] + second.rows()
    assert _same_rows(run.rows(), want)
    assert run.is_integer("epoch") and type(run.rows()[3]["epoch"]) is int and "val_loss" not in run.rows()[1]


def _append(logger: Any, step: int, metrics: dict[str, float]) -> None:
    """One ``log_metrics`` and ``save`` of a Lightning CSVLogger, as the Trainer calls them."""
    logger.log_metrics(metrics, step=step)
    logger.save()


def test_a_validation_row_of_the_resumed_piece_is_not_a_reset_of_the_joined_run(tmp_path: Path) -> None:
    """Lightning writes a validation's metrics on a line of their own at the step of the training row before it.
    While followed, that merges into the resumed piece's last row (an edit): the joined run must not be reset (tail -f
    prints the whole training again from step 0 on every validation)."""
    from lightning.fabric.loggers import CSVLogger

    arm = tmp_path / "arm"
    write_lightning_rows(arm / "version_0", [(s, {"train_loss": 1 / (s + 1)}) for s in range(30)])
    f = Follower([tmp_path])
    f.scan()
    lg = CSVLogger(root_dir=arm, name=None, version="version_1")
    for s in range(20, 25):
        _append(lg, s, {"train_loss": 2 / (s + 1)})
    f.scan()
    (run,) = f.stores.values()
    assert run.resumes == [20]
    gen = run.generation
    _append(lg, 24, {"val_loss": 0.1})  # (a key new to the file: CSVLogger rewrites it whole)
    f.scan()
    _append(lg, 25, {"train_loss": 0.5})
    f.scan()
    _append(lg, 25, {"val_loss": 0.05})  # (no new key: one line appended, merged into step 25's row)
    f.scan()
    (run,) = f.stores.values()
    assert run.value(run.index_of_step(25), "val_loss") == pytest.approx(0.05)
    assert run.generation == gen, "the joined run was reset: readers start it over from its first row"


def test_nan_in_rows_a_resumed_piece_replaced_is_still_alerted(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The first process diverged (NaN at step 25) and was resumed from its step-20 checkpoint in version_1: as for a
    resume within one file, the NaN in the rows the resume replaced is still said (it was, before the join)."""
    write_lightning_rows(tmp_path / "arm" / "version_0",
                         [(s, {"loss": math.nan if s >= 25 else 1 / (s + 1)}) for s in range(27)])
    write_lightning_rows(tmp_path / "arm" / "version_1", [(s, {"loss": 1 / (s + 1)}) for s in range(20, 40)])
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path)], capsys)
    assert rc == 1 and "step 25 loss non-finite" in out, out


def test_a_resumed_pieces_first_row_waits_for_its_second_to_join_it(tmp_path: Path) -> None:
    # (shown at once, it was a run of its own for a logging interval, then taken back: a panel come and gone)
    sine_csv(tmp_path / "arm" / "version_0", range(0, 10))
    f = Follower([tmp_path])
    f.scan()
    (first,) = f.stores
    sine_csv(tmp_path / "arm" / "version_1", range(8, 9), 3.0)
    assert f.scan() == set() and list(f.stores) == [first] and len(f.stores[first]) == 10
    sine_csv(tmp_path / "arm" / "version_1", range(8, 10), 3.0)
    assert f.scan() == {first} and list(f.stores) == [first] and f.stores[first].resumes == [8]


def test_a_row_logged_before_the_resumed_pieces_first_step_reads_live_as_read_once(tmp_path: Path) -> None:
    from lightning.fabric.loggers import CSVLogger

    arm = tmp_path / "arm"
    write_lightning_rows(arm / "version_0", [(s, {"train_loss": 1 / (s + 1)}) for s in range(30)])
    f = Follower([tmp_path])
    f.scan()
    lg = CSVLogger(root_dir=arm, name=None, version="version_1")
    for s in [*range(20, 25), 19, 25, 26]:  # (a row at step 19 after 24: inserted in its file, before its first)
        _append(lg, s, {"train_loss": 2 / (s + 1)})
        f.scan()
        live = {k: (list(st.steps), list(st.resumes)) for k, st in f.stores.items()}
        once = {k: (list(st.steps), list(st.resumes)) for k, st in read_once(tmp_path).stores.items()}
        assert live == once, s
