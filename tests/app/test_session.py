"""steptable.app.session: the session's state apart from widgets: layouts per trainer, pins and filters (measuring
only the keys they name), new keys after the columns shown, bad lines newest first, stalls read from the last row's
clock, schema files said once."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.alerts.engine import Alert
from steptable.app.session import Session
from steptable.ingest import Follower, Parsed, RunStore, load
from tests.app.helpers import app_rows, make_runs, row, session_counting_measures, write_rows
from tests.helpers import age, plain_run, spy_whole_copies, write
from tests.trainer_logs import write_clockless_verl

pytestmark = pytest.mark.usefixtures("xdg")  # (no user's schema directory leaks in)


def _session_with_a_dump_only_column(tmp_path: Path) -> Session:
    """A session over one StepLogger run whose ``gen`` column is dump-only (kept out of the layout)."""

    cols = [Col("step", 4, "step", "d"), Col("rew", 6, "rew", ".2f"),
            Col("gen", 6, "gen", None, "seconds", stream=False)]
    with StepLogger(cols, run_dir=tmp_path / "a", arm="a", console=False, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "rew": 0.5, "gen": 12.8})
    session = Session()
    for rid, st in load(tmp_path).items():
        session.update(rid, st)
    return session


def test_the_filter_reaches_columns_the_layout_keeps_out(tmp_path: Path) -> None:
    """`legend` says a column filter shows the dump-only columns; in the app the filter only narrowed the
    layout, so `/gen` left the step column alone."""
    session = _session_with_a_dump_only_column(tmp_path)
    assert [c.key for c in session.columns()[0]] == ["step", "rew"]
    session.pattern = "gen"
    assert [c.key for c in session.columns()[0]] == ["step", "gen"]
    session.pattern = ""
    assert [c.key for c in session.columns()[0]] == ["step", "rew"]


def test_the_filter_measures_only_the_keys_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep's filter measures only the keys it names, not every key of every run before filtering (which
    would freeze the app)."""
    _, session, measured = session_counting_measures(tmp_path, monkeypatch)
    session.pattern = "nomatch"
    assert [c.key for c in session.columns()[0]] == ["step"]
    assert [k for k in measured if k != "step"] == []


def test_the_newest_bad_lines_come_first_across_runs(tmp_path: Path) -> None:
    for arm in ("aaa", "zzz"):
        write_rows(tmp_path / arm / "metrics.jsonl", (row(0, s) for s in range(3)))
    with open(tmp_path / "aaa" / "metrics.jsonl", "a") as f:
        f.write("{old garbage\n" * 5)
    session = Session()
    for rid, st in load(tmp_path).items():
        session.update(rid, st)
    with open(tmp_path / "zzz" / "metrics.jsonl", "a") as f:
        f.write("{new garbage\n")
    for st in load(tmp_path / "zzz").values():
        session.update("zzz/metrics.jsonl", st)
    first = session.events(recent=1)[0]
    assert first.level == "B" and "zzz" in first.text and ":4:" in first.text


def test_a_column_pinned_under_a_filter_stays_after_it(tmp_path: Path) -> None:
    session = _session_with_a_dump_only_column(tmp_path)
    session.pattern = "gen"
    session.toggle_pin("gen")
    session.pattern = ""
    assert [c.key for c in session.columns()[0]] == ["step", "gen", "rew"]


def test_a_new_key_goes_after_the_columns_shown(tmp_path: Path) -> None:
    """A new key goes after the columns shown, even one more informative than they are (``kl``): the ranked keys
    are not sorted again, which would push the shown columns sideways."""
    def rows(keys: dict[str, Any], n: int) -> list[dict[str, Any]]:
        return [{"step": s, **{k: (f(s) if callable(f) else f) for k, f in keys.items()}} for s in range(n)]

    base = {"aaa": 0.5, "bbb": 1.0, "ccc": lambda s: round(math.sin(s * 1.7) % 1, 4)}
    write_rows(tmp_path / "A" / "metrics.jsonl", rows(base, 50))
    session = Session()
    for rid, store in load(tmp_path).items():
        session.update(rid, store)
    before = [c.key for c in session.layout]
    assert before == ["step", "ccc", "aaa", "bbb"]
    write_rows(tmp_path / "B" / "metrics.jsonl", rows({**base, "kl": lambda s: round(10 * math.cos(s * 2.3), 3)}, 50))
    for rid, store in load(tmp_path).items():
        session.update(rid, store)
    assert [c.key for c in session.layout] == [*before, "kl"]


def test_the_stall_check_reads_the_last_rows_clock_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, app_rows(0, 500))
    f = Follower([tmp_path])
    f.scan()
    session = Session()
    for rid, store in f.stores.items():
        session.update(rid, store)
    whole = spy_whole_copies(monkeypatch)
    last = 1.7e9 + 2 * 499
    assert session.check_stalls(last + 10) == {}
    stalls = session.check_stalls(last + 600)
    assert list(stalls.values()) == [pytest.approx(600)]
    session.events(recent=3)
    assert "wall_times" not in whole and "steps" not in whole


def store(run: str, n: int, arm: str = "", **extra: Any) -> RunStore:
    s = RunStore(run, f"/x/{run}/metrics.jsonl", arm=arm or run)
    rows = [{**row(0, i), **extra} for i in range(n)]
    if rows:
        s.add(Parsed(steps=list(range(n)), rows=rows))
    return s


def test_tables_of_one_arm_go_by_what_tells_them_apart() -> None:
    """Seeds of one arm were labelled by their run ids, and a title cut to its width kept the file name and lost
    the seed (``absor…jsonl`` twice): the generic file name goes where the directories tell them apart."""
    s = Session()
    for rid in ("absorb_seed1/metrics.jsonl", "absorb_seed2/metrics.jsonl", "x/metrics.jsonl", "x/metrics.csv",
                "solo/metrics.jsonl", "routeA/seed1/run.log", "routeA/seed1/train.log"):
        s.update(rid, store(rid, 3, arm="solo" if rid.startswith("solo") else "shared"))
    assert s.labels() == {
        "absorb_seed1/metrics.jsonl": "absorb_seed1", "absorb_seed2/metrics.jsonl": "absorb_seed2",
        "x/metrics.jsonl": "x/metrics.jsonl", "x/metrics.csv": "x/metrics.csv", "solo/metrics.jsonl": "solo",
        "routeA/seed1/run.log": "routeA/seed1/run.log", "routeA/seed1/train.log": "routeA/seed1"}


def test_session_layout_pins_arms_and_events() -> None:
    s = Session()
    assert not s.update("a/metrics.jsonl", store("a/metrics.jsonl", 0, arm="x"))  # no rows: no layout yet
    assert s.update("a/metrics.jsonl", store("a/metrics.jsonl", 5, arm="x"))
    assert s.update("b/metrics.jsonl", store("b/metrics.jsonl", 5, arm="x", extra_key=1.5))  # new key
    assert not s.update("b/metrics.jsonl", s.runs["b/metrics.jsonl"].store)
    assert s.labels() == {"a/metrics.jsonl": "a", "b/metrics.jsonl": "b"}  # same arm: by directory
    assert s.schema().name == "routing"
    cols, fixed = s.columns()
    assert cols[0].key == "step" and fixed == 1 and "extra_key" in {c.key for c in cols}
    s.toggle_pin("auroc")
    s.toggle_pin("step")  # the step column is always first anyway
    cols, fixed = s.columns()
    assert [c.key for c in cols[:2]] == ["step", "auroc"] and fixed == 2
    s.pattern = "rew"
    cols, fixed = s.columns()
    assert {c.key for c in cols} == {"step", "auroc", "rew", "rew_s"}  # a pinned column survives the filter

    assert s.toggle_arm(0) == "a/metrics.jsonl" and s.visible() == ["b/metrics.jsonl"]
    s.toggle_arm(1)  # the last visible arm stays
    assert s.visible() == ["b/metrics.jsonl"]
    assert s.toggle_arm(7) is None

    s.add_alerts("a/metrics.jsonl", [Alert("E", 3, "loss", "nonfinite", "non-finite (NaN)"),
                                     Alert("W", 4, "gn", "spike", "spike")])
    bad = RunStore("c", "/x/c.jsonl")
    from steptable.ingest import BadLine

    bad.add_bad([BadLine("/x/c.jsonl", 7, "malformed JSON")])
    s.update("c", bad)
    events = s.events()
    assert [e.level for e in events] == ["E", "B", "W"]
    assert events[1].line() == "B c: /x/c.jsonl:7: malformed JSON"
    assert s.status_counts() == {"E": 1, "W": 1, "S": 0, "B": 1}


def test_session_named_schema() -> None:
    s = Session(schema_name="generic")
    s.update("a", store("a", 3))
    assert s.schema().name == "generic"
    unknown = Session(schema_name="nope")  # run_watch refuses it at start; a session still shows the runs
    assert unknown.schema().name == "generic" and "unknown schema 'nope'" in unknown.problems[0]


def test_session_lays_out_again_when_steps_outgrow_the_step_column() -> None:
    s = Session(schema_name="generic")
    st = RunStore("a", "/x/a.jsonl")
    st.add(Parsed(steps=[998, 999], rows=[{"step": 998, "loss": 0.5}, {"step": 999, "loss": 0.4}]))
    assert s.update("a", st)
    step_col = next(c for c in s.layout if c.key == "step")
    assert step_col.width == 4 and step_col.fmt == "d"
    assert not s.update("a", st)
    st.add(Parsed(steps=[100_000], rows=[{"step": 100_000, "loss": 0.3}]))
    assert s.update("a", st)
    assert next(c for c in s.layout if c.key == "step").width == 6


BAD_TOML = '[schema]\nname = "bad name"\n'


def test_the_session_falls_back_to_the_built_in_schema_and_says_the_file_once(tmp_path: Path) -> None:
    """The session's fallback is the built-in schema for the run, not an empty or generic table."""
    run_dir = tmp_path / "exp"
    make_runs(run_dir, arms=("a",))
    (run_dir / "steptable.toml").write_text(BAD_TOML)
    (store,) = load(run_dir / "a" / "metrics.jsonl").values()
    session = Session()
    session.update("a", store)
    assert session.schema().name == "routing" and len(session.problems) == 1
    session.update("a", store)
    assert len(session.problems) == 1  # said once


def test_the_app_opened_after_the_hang_sees_it(tmp_path: Path) -> None:
    path = write_clockless_verl(tmp_path / "v" / "exp.jsonl")
    age(path, 1200)
    f = Follower([tmp_path])
    f.scan()
    session = Session()
    for rid, store in f.stores.items():
        session.update(rid, store)
    (gap,) = session.check_stalls(time.time()).values()
    assert gap == pytest.approx(1200, abs=60)


def test_the_watch_session_says_an_unused_file_once(tmp_path: Path) -> None:
    from steptable.app.session import Session

    plain_run(tmp_path / "r")
    write(tmp_path / "steptable.toml", '[schema]\nname = "quiet"\nhide = ["actor/*"]\n')
    (store,) = load(tmp_path).values()
    session = Session()
    session.update("r", store)
    session.update("r", store)
    assert len(session.problems) == 1 and "applies to none" in session.problems[0]
    assert "(the file is not used)" in session.problems[0] and session.layout
