"""steptable.ingest.files.follow: the Follower keeps every run's store up to date: several roots, files given
directly, runs that appear later, a failing source, runs whose files are deleted (forgotten after a grace),
rotated or replaced."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower
from tests.helpers import write_rows
from tests.ingest.helpers import (
    FollowerClock,
    check_steps,
    follower_store,
    polls_until_gone,
    rew_rows,
    timed_rows,
    train_line,
)


def test_several_roots_prefix_run_ids(tmp_path: Path) -> None:
    write_rows(tmp_path / "a" / "x" / "metrics.jsonl", rew_rows(0, 1))
    write_rows(tmp_path / "b" / "x" / "metrics.jsonl", rew_rows(0, 1))
    f = Follower([tmp_path / "a", tmp_path / "b"])
    f.scan()
    assert sorted(f.stores) == [f"{tmp_path.as_posix()}/a/x/metrics.jsonl", f"{tmp_path.as_posix()}/b/x/metrics.jsonl"]


def test_a_file_given_directly(tmp_path: Path) -> None:
    path = tmp_path / "exp7" / "logs" / "odd_name.txt"
    path.parent.mkdir(parents=True)
    path.write_text("step:0 - a:1\n")
    f = Follower([path])
    f.scan()
    assert list(f.stores) == ["odd_name.txt"] and f.stores["odd_name.txt"].arm == "odd_name"


def test_run_created_after_start_is_picked_up(tmp_path: Path) -> None:
    write_rows(tmp_path / "logs" / "a" / "metrics.jsonl", rew_rows(0, 3))
    f = Follower([tmp_path / "logs"])
    assert f.scan() == {"a/metrics.jsonl"}
    write_rows(tmp_path / "logs" / "b" / "metrics.jsonl", rew_rows(0, 2))
    write_rows(tmp_path / "logs" / "a" / "metrics.jsonl", rew_rows(3, 4))
    assert f.scan() == {"a/metrics.jsonl", "b/metrics.jsonl"}
    assert len(f.stores["a/metrics.jsonl"]) == 4 and len(f.stores["b/metrics.jsonl"]) == 2


def test_a_failing_source_does_not_stop_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", rew_rows(0, 2))
    write_rows(tmp_path / "b" / "metrics.jsonl", rew_rows(0, 2))
    f = Follower([tmp_path])
    f.scan()
    broken = f._sources[tmp_path / "a" / "metrics.jsonl"]

    def boom() -> bool:
        raise RuntimeError("boom")

    monkeypatch.setattr(broken, "poll", boom)
    write_rows(tmp_path / "b" / "metrics.jsonl", rew_rows(2, 3))
    f.scan()
    assert len(f.stores["b/metrics.jsonl"]) == 3
    assert f.errors == [f"{tmp_path / 'a' / 'metrics.jsonl'}: internal error (RuntimeError: boom)"]


def test_a_read_that_fails_is_the_files_failure_not_an_internal_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that opens but whose read fails (EIO on a network mount): said as unreadable with the system's words,
    and counted as a run that could not be read (summary exited 0 after an "internal error")."""
    import errno

    import steptable.ingest.files.tail as tail_mod

    write_rows(tmp_path / "a" / "metrics.jsonl", rew_rows(0, 2))
    write_rows(tmp_path / "b" / "metrics.jsonl", rew_rows(0, 2))
    real_open = tail_mod.open_binary

    class Failing:
        def __init__(self, f: Any) -> None:
            self.f = f

        def read(self, *a: Any) -> bytes:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

        def __getattr__(self, name: str) -> Any:
            return getattr(self.f, name)

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

    def opened(path: Path) -> Any:
        return Failing(real_open(path)) if path.parent.name == "a" else real_open(path)

    monkeypatch.setattr(tail_mod, "open_binary", opened)
    f = Follower([tmp_path])
    f.scan()
    assert len(f.stores["b/metrics.jsonl"]) == 2
    assert f.errors == [f"{tmp_path / 'a' / 'metrics.jsonl'}: unreadable ({os.strerror(errno.EIO)})"]
    assert f.unreadable() == [str(tmp_path / "a" / "metrics.jsonl")]


def test_a_console_log_cut_inside_its_first_metrics_line_shows_when_the_line_ends(tmp_path: Path) -> None:
    log = tmp_path / "tz" / "train.log"
    log.parent.mkdir()
    log.write_text("loading the model\n(main_task pid=1) step:0 - critic/score/mean:0.")  # block-buffered stdout
    fol = Follower([tmp_path])
    fol.scan()
    assert fol.stores == {}
    with open(log, "a") as f:
        f.write("5 - actor/pg_loss:0.1\nsaving a checkpoint\n")
    fol.scan()
    assert [list(st.steps) for st in fol.stores.values()] == [[0]]


def test_a_console_log_whose_first_metrics_line_came_while_it_was_judged_is_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log read to its end with no metrics line, the trainer's first metrics line (and its last: the run ended)
    written after that read and before the follower noted the file's size as judged: the line is found at the next
    pass, not passed over for as long as the file does not grow."""
    log = tmp_path / "tz" / "train.log"
    log.parent.mkdir()
    log.write_text("loading the model\n")
    fol = Follower([tmp_path])
    real_reject = fol._rejected.add

    def write_then_reject(*args: Any) -> None:
        with open(log, "a") as f:
            f.write("(main_task pid=1) step:0 - critic/score/mean:0.5 - actor/pg_loss:0.1\n")
        monkeypatch.setattr(fol._rejected, "add", real_reject)
        real_reject(*args)

    monkeypatch.setattr(fol._rejected, "add", write_then_reject)
    fol.scan()
    assert fol.stores == {}
    fol.scan()
    assert [list(st.steps) for st in fol.stores.values()] == [[0]] and fol.errors == []


def test_a_deleted_run_is_forgotten_after_the_grace_and_its_store_stays_readable(
    tmp_path: Path, follower_clock: FollowerClock
) -> None:
    """A sweep deletes old run directories: their runs leave ``stores`` and are not polled any more (an idle tick
    does not stat every run ever seen), while a reader that holds a store still reads its rows."""
    for name in ("r0", "r1", "r2"):
        write_rows(tmp_path / name / "metrics.jsonl", timed_rows(0, 5))
    f = Follower([tmp_path])
    f.scan()
    held = f.stores["r1/metrics.jsonl"]
    shutil.rmtree(tmp_path / "r1")
    for _ in range(5):  # within the grace (a rotation, a run about to write its file again): still followed
        f.scan()
        follower_clock.t += 1.0
    assert "r1/metrics.jsonl" in f.stores and len(f._sources) == 3
    changed = polls_until_gone(f, follower_clock, "r1/metrics.jsonl")
    assert sorted(f.stores) == ["r0/metrics.jsonl", "r2/metrics.jsonl"] and len(f._sources) == 2
    assert "r1/metrics.jsonl" in changed  # (readers hear of it: tail drops its alert state)
    assert not f._by_file.keys() - {os.path.abspath(tmp_path / n / "metrics.jsonl") for n in ("r0", "r2")}
    assert list(held.steps) == [0, 1, 2, 3, 4] and held.row(4)["loss"] == 1.0 and not os.path.exists(held.path)
    assert f.scan() == set() and f.errors == []


def test_one_late_look_is_not_a_grace_gone_by(tmp_path: Path, follower_clock: FollowerClock) -> None:
    """A follower paused for a minute (a suspended laptop) that finds a file missing once keeps it: the grace is
    counted in polls as well as in seconds."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, timed_rows(0, 3))
    f = Follower([tmp_path])
    f.scan()
    path.unlink()
    f.scan()
    follower_clock.t += 600.0
    f.scan()
    assert "a/metrics.jsonl" in f.stores
    write_rows(path, timed_rows(0, 2))  # the new file, as after a rotation: the same store, reset
    f.scan()
    assert list(f.stores["a/metrics.jsonl"].steps) == [0, 1] and f.stores["a/metrics.jsonl"].generation == 1


def test_a_rotation_within_the_grace_keeps_the_run_and_its_store(
    tmp_path: Path, follower_clock: FollowerClock
) -> None:
    """Rename + new file after a few polls: the same store, the renamed file's rows kept (it was read to its end);
    copytruncate: the same store, read again from the new content."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, timed_rows(0, 5))
    f = Follower([tmp_path])
    f.scan()
    store = f.stores["a/metrics.jsonl"]
    os.rename(path, path.with_name("metrics.jsonl.1"))
    for _ in range(5):  # (5 s)
        f.scan()
        follower_clock.t += 1.0
    write_rows(path, timed_rows(5, 7))
    f.scan()
    assert f.stores["a/metrics.jsonl"] is store and list(store.steps) == list(range(7)) and store.generation == 0
    path.write_text("")
    write_rows(path, timed_rows(7, 8))
    follower_clock.t += 600.0  # (missing no more: the grace starts again the next time)
    f.scan()
    assert f.stores["a/metrics.jsonl"] is store and list(store.steps) == [7] and f.errors == []


def test_files_judged_not_a_run_are_forgotten_when_deleted(tmp_path: Path) -> None:
    for i in range(3):
        write_rows(tmp_path / f"r{i}" / "metrics.jsonl", timed_rows(0, 2))
        (tmp_path / f"r{i}" / "notes.jsonl").write_text('{"text": "no metrics here"}\n')
    f = Follower([tmp_path])
    f.scan()
    assert len(f._rejected) == 3
    shutil.rmtree(tmp_path / "r0")
    f.scan()
    assert sorted(p.parent.name for p in f._rejected) == ["r1", "r2"]
    f.scan()  # (the rest stay judged: not read again)
    assert len(f._rejected) == 2 and sorted(f.stores) == [f"r{i}/metrics.jsonl" for i in range(3)]


def test_directory_that_does_not_exist_yet(tmp_path: Path) -> None:
    root = tmp_path / "later"
    f = Follower([root])
    assert f.scan() == set() and f.stores == {} and f.errors == []
    (root / "armB").mkdir(parents=True)
    (root / "armB" / "metrics.jsonl").write_bytes(train_line(0))
    assert f.scan() == {"armB/metrics.jsonl"}
    assert f.stores["armB/metrics.jsonl"].arm == "armB"


def _write(path: Path, kind: str, step_key: str | None, steps: range, scale: float) -> None:
    """Rows of ``steps`` (``loss`` = step x scale) as JSONL or CSV, with ``step_key`` or numbered by position."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{**({step_key: s} if step_key else {}), "loss": s * scale} for s in steps]
    if kind == "jsonl":
        text = "".join(json.dumps(r) + "\n" for r in rows)
    else:
        keys = list(rows[0])
        text = ",".join(keys) + "\n" + "".join(",".join(str(r[k]) for k in keys) + "\n" for r in rows)
    path.write_text(text)


def _append(path: Path, kind: str, step_key: str | None, steps: range, scale: float) -> None:
    lines = [{**({step_key: s} if step_key else {}), "loss": s * scale} for s in steps]
    with open(path, "a") as f:
        for r in lines:
            f.write(json.dumps(r) + "\n" if kind == "jsonl" else ",".join(str(v) for v in r.values()) + "\n")


@pytest.mark.parametrize("how", ["truncated", "replaced"])
@pytest.mark.parametrize("step_key", ["time/total_timesteps", "global_step", "_step", None])
@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_followed_file_restarted_or_replaced_keeps_its_steps(
    tmp_path: Path, kind: str, step_key: str | None, how: str
) -> None:
    """A restart that truncates the file, or a new file moved in its place, then appended to: every row keeps its
    step (rows copied from the re-read file store no ``step`` key of their own, which would make a CSV's new rows
    read nan)."""
    path = tmp_path / "run" / f"{'progress.csv' if kind == 'csv' else 'metrics.jsonl'}"
    _write(path, kind, step_key, range(0, 6), 1.0)
    fo = Follower([tmp_path])
    fo.scan()
    check_steps(follower_store(fo), list(range(6)))
    if how == "truncated":
        _write(path, kind, step_key, range(0, 3), 2.0)
    else:
        other = tmp_path / "next.tmp"
        _write(other, kind, step_key, range(0, 3), 2.0)
        os.replace(other, path)
    fo.scan()
    store = follower_store(fo)
    check_steps(store, [0, 1, 2])
    assert list(store.column("loss")) == [0.0, 2.0, 4.0]
    _append(path, kind, step_key, range(3, 5), 2.0)
    fo.scan()
    check_steps(store, [0, 1, 2, 3, 4])
    assert list(store.column("loss")) == [0.0, 2.0, 4.0, 6.0, 8.0]


def test_a_follower_and_its_stores_are_freed_by_reference_counting(tmp_path: Path) -> None:
    """A follower dropped takes its runs' stores (arrays of rows) with it without the collector (no cycle through
    the sources' report: the MCP server reads with a follower a call and must not keep each call's runs). Runs of
    several kinds, with a bad line reported."""
    import gc
    import weakref

    from tests.ingest.writers import torch_run

    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(20)])
    with open(tmp_path / "a" / "metrics.jsonl", "a") as f:
        f.write("{bad\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "progress.csv").write_text("step,loss\n" + "".join(f"{s},1.0\n" for s in range(20)))
    torch_run(tmp_path / "c", range(5))
    gc.collect()
    gc.disable()  # (nothing freed by a pass of the collector's own: what is freed, reference counting freed)
    try:
        fo = Follower([tmp_path])
        fo.scan()
        fo.finish()
        assert len(fo.stores) == 3 and fo.errors, (fo.stores, fo.errors)
        refs = [weakref.ref(fo), *(weakref.ref(s) for s in fo.stores.values())]
        del fo
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        gc.enable()
