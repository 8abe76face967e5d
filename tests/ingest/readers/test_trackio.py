"""trackio databases read as runs: one per run name, NaN, new rows by id while the writer holds the database,
read-only, damaged copies. The databases are written by trackio itself."""

from __future__ import annotations

import contextlib
import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from steptable.ingest.files.follow import Follower
from steptable.ingest.readers import trackio, trackiodb
from steptable.ingest.recordsource import TrackioSource
from tests.ingest import writers
from tests.ingest.readers.helpers import on_trainer_steps
from tests.ingest.writers import read_once, rows_of, same

pytest.importorskip("trackio")


def _by_arm(f: Follower):  # type: ignore[no-untyped-def]
    return {s.arm: s for s in f.stores.values()}


def test_one_run_per_run_name(trackio_dir: Path) -> None:
    runs = _by_arm(read_once(trackio_dir))
    assert sorted(runs) == ["run-a", "run-b"]
    a = runs["run-a"]
    assert a.kind == "trackio" and list(a.steps) == [0, 1, 2, 3, 4] and list(runs["run-b"].steps) == [0, 1, 2]
    rows = rows_of(a)
    assert [r["train/loss"] for r in rows] == pytest.approx([1.0 / (i + 1) for i in range(5)])
    assert math.isnan(rows[1]["x"]) and rows[2]["x"] == 2.0 and rows[3]["nested/a"] == 3
    assert a.has_clock and a.meta["config"]["lr"] == 0.1 and not a.bad


def test_a_trainers_run_is_stepped_by_its_global_step_not_trackios_log_count(hf_tracked: Path) -> None:
    """transformers' trackio callback logs ``train/global_step`` in each row and no step (trackio counts ``log``
    calls; an evaluation is one): the rows are the trainer's steps, its evaluation in the row of its step, and
    trackio's count is kept as ``_step``."""
    rows = on_trainer_steps(_by_arm(read_once(hf_tracked / "trackio"))["hf-a"], hf_tracked)
    assert rows[2]["_step"] == 0 and rows[4]["_step"] == 1  # (the eval at step 4 is trackio's row 2)


def test_rows_without_the_trainers_step_keep_trackios(tmp_path: Path) -> None:
    """TRL's profiling logs to trackio with the trainer's step as trackio's and no ``train/global_step``;
    transformers' callback logs that key and no step (trackio counts on: an evaluation is one more): each row lands
    on the trainer's step."""
    pytest.importorskip("trackio")
    writers.run_writer("""
        import trackio
        trackio.init(project="proj", name="grpo")
        for s in range(3):
            trackio.log({"profiling/Time taken: generate": 0.5 + s}, step=s)
            trackio.log({"train/reward": float(s), "train/global_step": s + 1})
            trackio.log({"eval/reward": 10.0 + s, "train/global_step": s + 1})
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    store = _by_arm(read_once(tmp_path))["grpo"]
    assert list(store.steps) == [0, 1, 2, 3]
    rows = rows_of(store)
    assert [r.get("profiling/Time taken: generate") for r in rows] == [0.5, 1.5, 2.5, None]
    assert [r.get("train/reward") for r in rows] == [None, 0.0, 1.0, 2.0]
    assert [r.get("eval/reward") for r in rows] == [None, 10.0, 11.0, 12.0] and not store.bad
    (db,) = tmp_path.glob("*.db")
    batch, _ = trackio.TrackioReader(db, str(db)).read()
    with trackiodb.connect(db) as con:
        got = con.execute("SELECT id, run_name, step, timestamp, metrics FROM metrics ORDER BY id").fetchall()
    alone = trackio.TrackioReader(db, str(db))._rows(got, [])
    want = [0, 1, 1, 1, 2, 2, 2, 3, 3]
    assert [int(s) for p in batch["grpo"] for s in p.steps] == [int(s) for s in alone.steps] == want


def test_a_metric_logged_as_none_is_no_value_and_a_nan_stays_one(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """trackio stores a metric logged as None as null and a NaN apart from it: the None is an absent cell (it read
    as NaN, with an error alert), the NaN a NaN; batch and row by row alike."""
    from tests.helpers import run_cli

    writers.run_writer("""
        import trackio
        trackio.init(project="proj", name="nulls")
        for s in range(12):
            trackio.log({"loss": 1.0 / (s + 1), "grad_norm": None if s % 5 == 4 else 1.0,
                         "reward": float("nan") if s == 10 else 0.5}, step=s)
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    store = _by_arm(read_once(tmp_path))["nulls"]
    rows = rows_of(store)
    assert [r.get("grad_norm") for r in rows] == [1.0 if s % 5 != 4 else None for s in range(12)]
    assert math.isnan(rows[10]["reward"])
    (db,) = tmp_path.glob("*.db")
    with trackiodb.connect(db) as con:
        got = con.execute("SELECT id, run_name, step, timestamp, metrics FROM metrics ORDER BY id").fetchall()
    alone = trackio.TrackioReader(db, str(db))._rows(got, [])
    assert [r.get("grad_norm") for r in alone.rows or []] == [r.get("grad_norm") for r in rows]
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "grad_norm non-finite" not in out and "reward non-finite" in out, out + err


def test_a_list_logged_is_its_text_not_a_count(tmp_path: Path) -> None:
    """A list trackio stores (two parameter groups' learning rates, a pair of ints) is what was logged, its text;
    batch and row by row alike: it read as steptable's own ``n/d`` count (``[3, 4]`` shown as ``3/4``)."""
    writers.run_writer("""
        import trackio
        trackio.init(project="proj", name="lists")
        for s in range(3):
            trackio.log({"loss": 1.0 / (s + 1), "lr": [1e-3, 1e-4], "counts": [3, 4], "nested": {"three": [1, 2, 3]}})
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    rows = rows_of(_by_arm(read_once(tmp_path))["lists"])
    want = [("[0.001, 0.0001]", "[3, 4]", "[1, 2, 3]")] * 3
    assert [(r["lr"], r["counts"], r["nested/three"]) for r in rows] == want
    (db,) = tmp_path.glob("*.db")
    with trackiodb.connect(db) as con:
        got = con.execute("SELECT id, run_name, step, timestamp, metrics FROM metrics ORDER BY id").fetchall()
    alone = trackio.TrackioReader(db, str(db))._rows(got, [])
    assert [(r["lr"], r["counts"], r["nested/three"]) for r in alone.rows or []] == want


def test_a_run_started_again_under_its_name_is_another_run(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """trackio.init(name="a") again without resume makes a run of its own (another run id): it was read into the
    first, which then read "resumed 0" with its rows gone and the other run's config. A run resumed
    (resume="allow") keeps its id: one run."""
    from tests.helpers import run_cli

    writers.run_writer("""
        import trackio
        trackio.init(project="p", name="a", config={"lr": 0.1})
        for s in range(5):
            trackio.log({"loss": 1.0}, step=s)
        trackio.finish()
        trackio.init(project="p", name="a", resume="allow", config={"lr": 0.1})
        for s in range(5, 8):
            trackio.log({"loss": 0.5}, step=s)
        trackio.finish()
        trackio.init(project="p", name="a", config={"lr": 0.2})
        for s in range(3):
            trackio.log({"loss": 0.2}, step=s)
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    f = read_once(tmp_path)
    got = {st.run.split("#", 1)[1]: st for st in f.stores.values()}
    assert sorted(got) == ["a", "a#2"] and {st.arm for st in got.values()} == {"a"}
    assert list(got["a"].steps) == list(range(8)) and not got["a"].resumes
    assert list(got["a#2"].steps) == [0, 1, 2]
    assert got["a"].meta["config"]["lr"] == 0.1 and got["a#2"].meta["config"]["lr"] == 0.2
    rc, out, err = run_cli(["runs", str(tmp_path)], capsys)
    assert rc == 0 and len(out.splitlines()) == 2 and "resumed" not in out, out + err


def test_a_log_of_traces_alone_adds_no_row(tmp_path: Path) -> None:
    """trackio keeps traces in a table of their own and the log call that held them as a row of no metrics: a step
    with traces and no metrics is no row of the run (it was a blank one)."""
    pytest.importorskip("trackio")
    writers.run_writer("""
        import trackio
        trackio.init(project="proj", name="r")
        trackio.log({"loss": 1.0}, step=1)
        trackio.log({"val/generations": [trackio.Trace(messages=[{"role": "user", "content": "q"}])]}, step=2)
        trackio.log({"loss": 0.5}, step=3)
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    (db,) = tmp_path.glob("*.db")
    with trackiodb.connect(db) as con:
        assert [r[0] for r in con.execute("SELECT metrics FROM metrics ORDER BY id")][1] == b"{}"
    store = _by_arm(read_once(tmp_path))["r"]
    assert list(store.steps) == [1, 3] and [r["loss"] for r in rows_of(store)] == [1.0, 0.5]


def _copy(trackio_dir: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    out = dst / "proj.db"
    shutil.copy(trackio_dir / "proj.db", out)
    return out


def test_new_rows_by_id_while_the_writer_holds_a_transaction(trackio_dir: Path, tmp_path: Path) -> None:
    db = _copy(trackio_dir, tmp_path / "t")
    f = Follower([tmp_path])
    f.scan()
    a = _by_arm(f)["run-a"]
    assert len(a) == 5
    w = sqlite3.connect(db, timeout=0.1)
    w.execute("PRAGMA journal_mode=WAL")
    (run_a,) = w.execute("SELECT run_id FROM metrics WHERE run_name = 'run-a' LIMIT 1").fetchone()
    w.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES "
              "(?, '2026-01-01T00:00:00+00:00', 'run-a', 5, '{\"train/loss\": \"NaN\"}')", (run_a,))
    w.commit()
    w.execute("BEGIN IMMEDIATE")  # the writer holds its write lock: the reader must neither block nor fail
    w.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES "
              "('x', '2026-01-01T00:00:01+00:00', 'run-c', 0, '{\"loss\": 1}')")
    f.scan()
    assert list(a.steps) == [0, 1, 2, 3, 4, 5] and math.isnan(rows_of(a)[5]["train/loss"])
    assert "run-c" not in _by_arm(f)
    w.commit()  # the writer was never blocked: its commit goes through
    w.close()
    f.scan()
    assert list(_by_arm(f)["run-c"].steps) == [0] and not f.errors


def test_lock_met_after_rows_were_taken_keeps_them(trackio_dir: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that meets a lock after some fetches keeps the rows taken (none lost, none read twice) and reads the
    rest at the next poll, with nothing reported."""
    db = _copy(trackio_dir, tmp_path / "t")
    real = trackio.connect

    class Locking:  # a cursor that meets a lock at its second fetch
        def __init__(self, cur: sqlite3.Cursor) -> None:
            self.cur, self.calls = cur, 0

        def fetchmany(self, n: int) -> list[object]:
            self.calls += 1
            if self.calls == 2:
                raise sqlite3.OperationalError("database is locked")
            return self.cur.fetchmany(n)

    class Connection:
        def __init__(self, con: sqlite3.Connection) -> None:
            self.con = con

        def execute(self, *args: object) -> object:
            cur = self.con.execute(*args)  # type: ignore[arg-type]
            return Locking(cur) if "FROM metrics WHERE id >" in str(args[0]) else cur

    @contextlib.contextmanager
    def locking(path: Path):  # type: ignore[no-untyped-def]
        with real(path) as con:
            yield Connection(con)

    monkeypatch.setattr(trackio, "FETCH", 3)
    monkeypatch.setattr(trackio, "FETCH_MIN", 3)
    monkeypatch.setattr(trackio, "connect", locking)
    reader = trackio.TrackioReader(db, str(db))
    got, bad = reader.read()
    assert not bad and reader.last_id == 3 and reader.changed()
    assert list(got) == ["run-a"] and [s for p in got["run-a"] for s in p.steps] == [0, 1, 2]
    monkeypatch.setattr(trackio, "connect", real)
    rest, bad = reader.read()
    assert not bad and not reader.changed()
    steps = {run: [s for p in parsed for s in p.steps] for run, parsed in rest.items()}
    assert steps == {"run-a": [3, 4], "run-b": [0, 1, 2]}


def test_flipped_byte_in_a_row_reported_other_rows_kept(trackio_dir: Path, tmp_path: Path) -> None:
    db = _copy(trackio_dir, tmp_path / "t")
    data = bytearray(db.read_bytes())
    at = data.find(b'{"train/loss":0.25')  # run-a's step 3
    assert at > 0
    data[at] = ord("[")
    db.write_bytes(bytes(data))
    f = read_once(tmp_path)
    runs = _by_arm(f)
    assert list(runs["run-a"].steps) == [0, 1, 2, 4] and list(runs["run-b"].steps) == [0, 1, 2]
    assert any("row id" in e and "unreadable metrics" in e for e in f.errors)


def test_text_that_is_not_utf8_read_with_its_row(trackio_dir: Path, tmp_path: Path) -> None:
    db = _copy(trackio_dir, tmp_path / "t")
    with contextlib.closing(sqlite3.connect(db)) as w:  # a damaged page's bytes, stored as TEXT by SQLite itself
        w.execute("UPDATE metrics SET run_name = CAST(X'ff2d62' AS TEXT), timestamp = CAST(X'c3' AS TEXT), "
                  "run_id = 'damaged' WHERE run_name = 'run-b' AND step = 1")
        w.commit()
    f = read_once(tmp_path)
    runs = _by_arm(f)
    assert list(runs["run-a"].steps) == [0, 1, 2, 3, 4] and list(runs["run-b"].steps) == [0, 2]
    assert list(runs["\ufffd-b"].steps) == [1] and not f.errors


def test_schema_bytes_not_utf8_reported_not_raised(trackio_dir: Path, tmp_path: Path) -> None:
    db = _copy(trackio_dir, tmp_path / "t")
    data = bytearray(db.read_bytes())
    at = data.find(b"step)", data.find(b"ON metrics(run_id, step)"))  # an index on a column it then lacks
    assert at > 0
    data[at + 1] = 0xFF  # SQLite's message about the schema then quotes a byte that is not UTF-8
    db.write_bytes(bytes(data))
    f = read_once(tmp_path)
    assert f.errors and all(str(db) in e for e in f.errors)
    assert any("schema is unreadable" in e for e in f.errors), f.errors
    assert all(len(s) == 0 for s in f.stores.values())


def test_cut_database_reported_good_rows_kept(trackio_dir: Path, tmp_path: Path) -> None:
    db = _copy(trackio_dir, tmp_path / "t")
    data = db.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    rows_page = min(i for i in range(0, len(data), page) if b'{"train/loss":1.0' in data[i:i + page])
    db.write_bytes(data[: rows_page + page // 2])  # cut in the middle of the page holding the rows
    good = {s.arm: rows_of(s) for s in read_once(trackio_dir).stores.values()}
    f = read_once(tmp_path)
    assert f.errors and all(str(db) in e for e in f.errors) and any("damaged" in e for e in f.errors)
    for store in f.stores.values():  # what is read is what was written
        for row in rows_of(store):
            assert any(row["step"] == g["step"] and row.get("train/loss") == g.get("train/loss")
                       for g in good.get(store.arm, []))


def test_empty_file_reported(tmp_path: Path) -> None:
    db = tmp_path / "proj.db"
    db.write_bytes(b"")
    f = read_once(db)
    assert len(f.errors) == 1 and "empty file" in f.errors[0]
    (store,) = f.stores.values()
    assert len(store) == 0


def test_read_only(trackio_dir: Path, tmp_path: Path) -> None:
    db = _copy(trackio_dir, tmp_path / "t")
    before = db.read_bytes()
    read_once(tmp_path)
    assert db.read_bytes() == before


def _one_by_one(db: Path) -> dict[str, list[dict[str, object]]]:
    """The rows as the row-by-row path reads them (each metrics object decoded and flattened alone)."""
    reader = trackio.TrackioReader(db, str(db))
    with trackiodb.connect(db) as con:
        got = con.execute("SELECT id, run_name, step, timestamp, metrics FROM metrics ORDER BY id").fetchall()
    out: dict[str, list[dict[str, object]]] = {}
    for run in sorted({trackiodb.text(r[1]) for r in got}):
        bad: list[object] = []
        parsed = reader._rows([r for r in got if trackiodb.text(r[1]) == run], bad)  # type: ignore[arg-type]
        assert parsed.rows is not None and not bad
        out[run] = parsed.rows
    return out


def _same_rows(got: list[dict[str, object]], want: list[dict[str, object]]) -> bool:
    return len(got) == len(want) and all(
        {k: v for k, v in g.items() if v is not None} .keys() == w.keys() and all(same(g[k], w[k]) for k in w)
        for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("extra", ["", "data", "step", "data_step"])
def test_batch_decode_reads_the_rows_the_row_by_row_path_reads(tmp_path: Path, extra: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs long enough for the JSONL reader's typed batch decode, with NaN, nested keys, ints and text; a metrics
    object holding a key the row gains itself (``step``) or verl's envelope (``data``, with ``step`` in it or not)
    reads as row by row does (all rows in one fetch here; in several: the test below)."""
    monkeypatch.setattr(trackio, "FETCH", 10_000)
    monkeypatch.setattr(trackio, "FETCH_MIN", 10_000)
    root = tmp_path / "tk"
    writers.run_writer(f"""
        import math, trackio
        for name, n in (("long-a", 300), ("long-b", 150)):
            trackio.init(project="big", name=name)
            for i in range(n):
                row = {{"train/loss": 1.0 / (i + 1), "x": math.nan if i % 7 == 1 else float(i),
                       "nested": {{"a": i, "b": {{"c": -i}}}}, "tag": "t" if i % 50 else "u", "count": i * 3}}
                if {extra!r} == "data" and i == 200:
                    row["data"] = {{"inner": 1.5}}
                if {extra!r} == "step" and i == 120:
                    row["step"] = 0.5
                if {extra!r} == "data_step" and i == 200:
                    row["data"] = {{"step": 7, "y": 2.0}}
                trackio.log(row)
            trackio.finish()
    """, {"TRACKIO_DIR": str(root)})
    want = _one_by_one(root / "big.db")
    f = read_once(root)
    runs = _by_arm(f)
    (source,) = f._sources.values()
    assert isinstance(source, TrackioSource)
    fast = {run: p.fast_chunks for run, p in source.reader._parsers.items()}
    # (the clash is logged at step 200 of long-a only for "data", at step 120 of both for "step")
    assert fast == {"": {"long-a": 1, "long-b": 1}, "data": {"long-a": 0, "long-b": 1},
                    "step": {"long-a": 0, "long-b": 0}, "data_step": {"long-a": 0, "long-b": 1}}[extra], fast
    assert sorted(runs) == ["long-a", "long-b"]
    for name, store in runs.items():
        assert list(store.steps) == list(range(300 if name == "long-a" else 150))
        assert _same_rows(rows_of(store), want[name]), name
        assert not store.bad


@pytest.mark.parametrize("fetch", [10_000, 37])
def test_rows_read_in_pieces_read_as_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fetch: int) -> None:
    """Rows fetched a few at a time (37: a fetch holds the end of one run and the start of the next) and handed to
    the batch decode a few at a time (the piece size made small) read as row by row does: none lost or doubled where
    a fetch or a piece ends, NaN and text included."""
    root = tmp_path / "tk"
    writers.run_writer("""
        import math, trackio
        for name, n in (("pieces", 400), ("after", 90)):
            trackio.init(project="big", name=name)
            for i in range(n):
                trackio.log({"train/loss": 1.0 / (i + 1), "x": math.nan if i % 9 == 4 else float(i),
                             "tag": f"t{i}", "nested": {"a": i}})
            trackio.finish()
    """, {"TRACKIO_DIR": str(root)})
    want = _one_by_one(root / "big.db")
    monkeypatch.setattr(trackio, "PIECE", 1000)
    monkeypatch.setattr(trackio, "FETCH", fetch)
    monkeypatch.setattr(trackio, "FETCH_MIN", fetch)
    monkeypatch.setattr(trackio, "FETCH_MAX", fetch)
    f = read_once(root)
    (source,) = f._sources.values()
    assert isinstance(source, TrackioSource)
    assert source.reader._parsers["pieces"].fast_chunks > 9
    runs = _by_arm(f)
    assert sorted(runs) == ["after", "pieces"]
    for name, n in (("pieces", 400), ("after", 90)):
        assert list(runs[name].steps) == list(range(n))
        assert _same_rows(rows_of(runs[name]), want[name]), name
        assert not runs[name].bad
    # (the store keeps one row a step: the batches themselves hold each row once)
    got, bad = trackio.TrackioReader(root / "big.db", "big").read()
    assert not bad
    assert {run: [s for p in parsed for s in p.steps] for run, parsed in got.items()} == {
        "pieces": list(range(400)), "after": list(range(90))}


@pytest.mark.parametrize("when", ["before its stat", "before its connection"])
def test_a_database_deleted_while_a_poll_reads_it_is_missing_not_unreadable(
        trackio_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """The project's database deleted after the poll found it there and before it read it: no "empty file" nor
    "unreadable" notice (the file is gone, which the next poll finds), and the rows read stay shown."""
    db = _copy(trackio_dir, tmp_path / "t")
    f = Follower([tmp_path])
    f.scan()
    shown = {arm: list(s.steps) for arm, s in _by_arm(f).items()}
    w = sqlite3.connect(db)
    w.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES "
              "('x', '2026-01-01T00:00:00+00:00', 'run-a', 5, '{\"loss\": 1}')")
    w.commit()
    w.close()
    src = next(iter(f._sources.values()))
    assert isinstance(src, TrackioSource)
    if when == "before its stat":
        real_sig = trackio.TrackioReader._signature
        calls: list[int] = []

        def delete_then_stat(self: trackio.TrackioReader) -> tuple[int, ...]:
            calls.append(1)
            if len(calls) == 2:  # (the first: whether it changed; the second: the read's own)
                db.unlink()
            return real_sig(self)

        monkeypatch.setattr(trackio.TrackioReader, "_signature", delete_then_stat)
    else:
        real_connect = trackio.connect

        def delete_then_connect(path: Path) -> contextlib.AbstractContextManager[sqlite3.Connection]:
            db.unlink()
            return real_connect(path)

        monkeypatch.setattr(trackio, "connect", delete_then_connect)
    f.scan()
    monkeypatch.undo()
    f.scan()
    assert f.errors == [] and src.missing
    assert {arm: list(s.steps) for arm, s in _by_arm(f).items()} == shown
