"""The app's pure parts: sparklines, summaries, stalls, column order and filter, session state, themes, side files,
and the feed's coalescing inbox. No Textual app is run here."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest

from steptable.alerts.engine import Alert
from steptable.app.feed import Feed
from steptable.app.messages import AlertsFound, RunsChanged
from steptable.app.model import (
    Summary,
    display_order,
    downsample,
    filter_cols,
    spark,
    stalled_for,
    usual_interval,
)
from steptable.app.session import Session
from steptable.app.sidefiles import build_index, side_paths
from steptable.app.themes import load_themes, parse_theme, theme_dirs
from steptable.ingest import Follower, Parsed, RunStore
from steptable.table.columns import Col
from tests.app.helpers import HOSTILE, T0, make_runs, row, write_generations

COLS = (Col("step", 4, "step"), Col("rew", 6, "rew"), Col("kl", 6, "kl"), Col("actor/pg_loss", 8, "pg_loss"))


def store(run: str, n: int, arm: str = "", **extra: Any) -> RunStore:
    s = RunStore(run, f"/x/{run}/metrics.jsonl", arm=arm or run)
    rows = [{**row(0, i), **extra} for i in range(n)]
    if rows:
        s.add(Parsed(steps=list(range(n)), rows=rows))
    return s


def test_spark_scales_and_blanks_nan() -> None:
    assert spark([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert spark([1.0, math.nan, 1.0]) == "▄ ▄"  # flat line mid-height, gap for nan
    assert spark([0.0, 1.0], lo=0.0, hi=2.0) == "▁▅"  # shared scale across arms
    assert spark([math.nan]) == " "


def test_downsample_means_and_bounded_reads() -> None:
    assert downsample([1, 2, 3], 10) == [1.0, 2.0, 3.0]
    assert downsample([1, 3, 5, 7], 2) == [2.0, 6.0]
    assert downsample([1, 2, 3, 4], 2, n=2) == [1.0, 2.0]
    out = downsample([math.nan] * 4 + [1.0] * 4, 2)
    assert math.isnan(out[0]) and out[1] == 1.0

    class Counting(list[float]):
        reads = 0

        def __getitem__(self, i: Any) -> Any:
            Counting.reads += 1
            return super().__getitem__(i)

    big = Counting([float(i) for i in range(1_000_000)])
    line = downsample(big, 50)
    assert len(line) == 50 and Counting.reads <= 50 * 17  # not a million reads
    assert line[0] < line[-1]


def test_summary_incremental_and_reset() -> None:
    s = Summary().update([1.0, math.nan, 3.0])
    assert (s.lo, s.hi, s.last, s.seen) == (1.0, 3.0, 3.0, 3)
    s.update([1.0, math.nan, 3.0, -2.0, (1, 4)])
    assert (s.lo, s.hi, s.last) == (-2.0, 3.0, 0.25)
    s.update([5.0])  # shorter: the run was rewritten
    assert (s.lo, s.hi, s.last) == (5.0, 5.0, 5.0)


def test_stalls_are_relative_to_the_usual_interval() -> None:
    walls = [T0 + 2 * i for i in range(30)]
    assert usual_interval(walls) == 2.0
    assert usual_interval(walls[:4]) is None  # too few intervals to know
    last = walls[-1]
    assert stalled_for(walls, last, last + 30) is None  # under the 60 s floor
    assert stalled_for(walls, last, last + 61) == pytest.approx(61)  # > 10 x 2 s and > 60 s
    slow = [T0 + 600 * i for i in range(30)]
    assert stalled_for(slow, slow[-1], slow[-1] + 3000) is None  # 10-minute steps: 50 minutes is normal
    assert stalled_for(walls, None, last + 1e6) is None


def test_display_order_and_filter() -> None:
    assert [c.key for c in display_order(COLS, ["kl"])] == ["step", "kl", "rew", "actor/pg_loss"]
    assert [c.key for c in display_order(COLS, ["nope", "step"])] == ["step", "rew", "kl", "actor/pg_loss"]
    assert [c.key for c in filter_cols(COLS, "kl*")] == ["step", "kl"]
    assert [c.key for c in filter_cols(COLS, "loss, rew")] == ["step", "rew", "actor/pg_loss"]  # substring
    assert [c.key for c in filter_cols(COLS, "pg_*")] == ["step", "actor/pg_loss"]  # header glob
    assert [c.key for c in filter_cols(COLS, "zzz", keep=["rew"])] == ["step", "rew"]
    assert filter_cols(COLS, "  ") == COLS


def test_session_layout_pins_arms_and_events() -> None:
    s = Session()
    assert not s.update("a/metrics.jsonl", store("a/metrics.jsonl", 0, arm="x"))  # no rows: no layout yet
    assert s.update("a/metrics.jsonl", store("a/metrics.jsonl", 5, arm="x"))
    assert s.update("b/metrics.jsonl", store("b/metrics.jsonl", 5, arm="x", extra_key=1.5))  # new key
    assert not s.update("b/metrics.jsonl", s.runs["b/metrics.jsonl"].store)
    assert s.labels() == {"a/metrics.jsonl": "a/metrics.jsonl", "b/metrics.jsonl": "b/metrics.jsonl"}  # same arm
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

    s.add_alerts("a/metrics.jsonl", [Alert("E", 3, "loss", "nonfinite", "non-finite (nan)"),
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


def test_theme_files_parse() -> None:
    themes = load_themes()
    assert {"dark", "light", "high-contrast"} <= set(themes)
    assert themes["dark"].dark and not themes["light"].dark
    assert themes["light"].variables["text-success"].startswith("#")
    t = parse_theme("mine", "/* $primary: #000000; */\n$primary: #123456;\n$dark: false;\n$my-var: red 50%;\n")
    assert t.primary == "#123456" and not t.dark and t.variables == {"my-var": "red 50%"}
    with pytest.raises(ValueError):
        parse_theme("bad", "$background: #000;")
    assert theme_dirs()[-1].name == "themes"


def test_user_theme_dir_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "dark.tcss").write_text("$primary: #ff0000;\n")
    (tmp_path / "broken.tcss").write_text("no variables here")
    monkeypatch.setenv("STEPTABLE_THEMES", str(tmp_path))
    themes = load_themes()
    assert themes["dark"].primary == "#ff0000" and "broken" not in themes and "light" in themes


@pytest.mark.parametrize(
    ("text", "culprit"),
    [("$primary: notacolor;", "notacolor"), ("$primary: #123456;\n$surface: rgb(1,2;", "rgb(1,2"),
     ("$primary: #123456;\n$text-success: notacolor;", "$text-success"),
     ("$primary: #123456;\n$block-cursor-text-style: purple;", "$block-cursor-text-style"),
     ("$primary: #123456;\n$link-style-hover: purple;", "$link-style-hover"),
     ("$primary: #123456;\n$luminosity-spread: wide;", "wide")],
)  # fmt: skip
def test_a_theme_textual_would_refuse_is_not_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, culprit: str
) -> None:
    # Textual parses a theme only when it is applied: such a theme, picked with --theme or from the palette,
    # ended the app with a traceback.
    (tmp_path / "oops.tcss").write_text(text)
    monkeypatch.setenv("STEPTABLE_THEMES", str(tmp_path))
    problems: list[str] = []
    themes = load_themes(problems=problems)
    assert "oops" not in themes and "dark" in themes
    assert len(problems) == 1 and "oops" in problems[0] and culprit in problems[0]


def test_a_theme_with_textual_s_own_style_values_is_offered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fine.tcss").write_text("$primary: #123456;\n$link-style-hover: bold not underline;\n")
    monkeypatch.setenv("STEPTABLE_THEMES", str(tmp_path))
    problems: list[str] = []
    assert "fine" in load_themes(problems=problems) and problems == []


def test_generations_index_and_samples(tmp_path: Path) -> None:
    path = write_generations(tmp_path)
    with open(path, "ab") as fh:
        fh.write(b'{"step": 30, "completion": "partial')  # the writer is mid-line: not indexed yet
    idx = build_index([path])
    assert idx.steps == [0, 10, 20]
    assert idx.nearest(15) == 10 and idx.nearest(-5) == 0 and idx.nearest(99) == 20
    samples = idx.samples(10)
    assert len(samples) == 2 and samples[0].completion == HOSTILE and samples[0].reward == 1.0
    assert samples[0].extra == "12 tokens"
    assert side_paths({"generations": [path], "checkpoints": [tmp_path / "checkpoints.jsonl"]}) == [path]


def test_tinker_rollout_summaries(tmp_path: Path) -> None:
    d = tmp_path / "iteration_000012"
    d.mkdir()
    rec = {"split": "train", "group_idx": 0, "traj_idx": 1, "total_reward": 0.5, "final_reward": 0.5,
           "trajectory_metrics": {"correct": 1}, "steps": [
               {"step_idx": 0, "ob_len": 10, "ac_len": 4, "reward": 0.5, "logs": {"answer": "42\x1b[2J"}}]}
    (d / "train_rollout_summaries.jsonl").write_text(json.dumps(rec) + "\nnot json\n")
    idx = build_index(side_paths({"rollout_summaries": [d / "train_rollout_summaries.jsonl"]}))
    assert idx.steps == [12]
    good, bad = idx.samples(12)
    assert good.reward == 0.5 and "group 0 traj 1" in good.title and "answer: 42" in good.completion
    assert good.extra == "correct=1"
    assert bad.reward is None and "bad line" in bad.title
    assert idx.samples(13) == []


def test_feed_coalesces_changes_and_scans_alerts(tmp_path: Path) -> None:
    root = make_runs(tmp_path, steps=30, arms=("solo",))
    path = root / "solo" / "metrics.jsonl"
    with open(path, "a") as fh:
        fh.write(json.dumps({**row(0, 30), "loss": None}) + "\n")  # JSON null: a logged NaN loss
    follower = Follower([str(root)])
    posted: list[Any] = []
    feed = Feed([str(root)], follower=follower, preview_min_bytes=0)
    feed._post = posted.append
    ids = follower.scan()
    feed._changed(ids)
    feed._changed(ids)  # a second change before the app took the first: no second message
    assert posted == [RunsChanged()] and not feed.scanner.idle.is_set()
    assert feed.take() == ids and feed.take() == set()
    feed._changed(ids)
    assert posted == [RunsChanged(), RunsChanged()]

    stop = threading.Event()
    scanner = threading.Thread(target=feed.scanner.run, args=(stop,))
    scanner.start()
    assert feed.scanner.idle.wait(10)
    stop.set()
    scanner.join()
    alerts = [m for m in posted if isinstance(m, AlertsFound)]
    assert len(alerts) == 1 and any(a.kind == "nonfinite" and a.column == "loss" for a in alerts[0].alerts)
    assert feed.scanner.scan(next(iter(ids)), follower.stores[next(iter(ids))]) == []  # nothing new to scan


def test_feed_reports_a_failing_follower() -> None:
    class Broken:
        stores: dict[str, Any] = {}  # noqa: RUF012

        def run(self, stop: threading.Event, on_change: Any) -> None:
            raise OSError("disk on fire")

    posted: list[Any] = []
    Feed([], follower=Broken(), preview_min_bytes=0).run(threading.Event(), posted.append)
    assert "disk on fire" in posted[0].text


def test_line_assembly_crops_the_scrolling_part() -> None:
    from rich.segment import Segment
    from rich.style import Style

    from steptable.app.widgets.lines import join_line, visible_columns

    spans, ends = [(0, 4), (5, 9), (10, 14)], [5, 10, 15]  # three 4-cell columns after the fixed part
    assert visible_columns(spans, ends, 0, 7) == (0, 2, 0)
    assert visible_columns(spans, ends, 6, 7) == (1, 3, 1)
    cells = [Segment("stp"), Segment("bbbb"), Segment("cccc")]  # fixed "stp", then the visible columns 1..2
    line = join_line(cells, 1, True, Style(), 1, 8, 12)  # view = width - fixed part (4)
    assert "".join(s.text for s in line) == "stp     cccc"  # the column the left edge cuts: blank, no fragment
    short = join_line(cells[:2], 1, True, Style(), 0, 8, 12)
    assert "".join(s.text for s in short) == "stp bbbb    "  # padded to the width
    narrow = join_line(cells, 1, True, Style(), 0, 0, 2)
    assert "".join(s.text for s in narrow) == "st"


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


def test_rich_completions_tables_are_generations(tmp_path: Path) -> None:
    """MaxEnt-GRPO's rich_completions/<table>_step_N.json ({columns, data}, bare NaN allowed) reach the viewer."""
    from tests.trainer_logs import write_maxent_state

    out = write_maxent_state(tmp_path / "maxent")
    rich = out["completions"]
    extra = rich.parent / "completions_step_000004.json"
    extra.write_text('{"columns": ["step", "prompt", "completion", "reward_total", "advantage"],'
                     ' "data": [[4, "p", "c", NaN, 0.5], "not a row"]}')
    (rich.parent / "completions_step_000005.json").write_text('[1, 2]')
    paths = side_paths({"rich_completions": [rich, extra, rich.parent / "completions_step_000005.json"]})
    idx = build_index(paths)
    assert idx.steps == [2, 4, 5]
    a, b = idx.samples(2)
    assert (a.prompt, a.completion, a.reward, b.completion, b.reward) == ("2+2?", "4", 1.0, "9", 0.0)
    good, bad = idx.samples(4)
    assert good.reward is not None and math.isnan(good.reward) and "advantage 0.5" in good.extra
    assert "not a list" in bad.title
    assert "not a {columns, data} table" in idx.samples(5)[0].title


def test_generations_values_and_bad_lines(tmp_path: Path) -> None:
    """A reward logged as Infinity shows as inf (the decoder spells it as text); a bad line says where it is."""
    path = tmp_path / "generations.jsonl"
    path.write_bytes(b'{"step": 1, "completion": "a", "reward": Infinity}\n{"step": 1, oops\n')
    good, bad = build_index([path]).samples(1)
    assert good.reward == math.inf
    second = path.read_bytes().index(b"\n") + 1
    assert bad.title == f"generations.jsonl: bad line at byte {second}"


def test_long_completions_are_clipped_and_paged() -> None:
    from steptable.app.screens.generations import PAGE_LINES, clip, sample_text
    from steptable.app.sidefiles import Sample

    runaway = "\n".join(f"line {i}" for i in range(32_000))
    shown = clip(runaway)
    assert shown.startswith("line 0\n") and shown.endswith("line 31999") and "lines, " in shown
    assert shown.count("\n") < 200 and clip("short\ntext") == "short\ntext"
    one_line = "x" * 1_000_000
    assert len(clip(one_line)) < 20_000 and "999,9" not in clip(one_line)[:100]
    samples = [Sample(7, "generation", 0.5, "q", "\n".join(["y"] * 200)) for _ in range(128)]
    text, nxt = sample_text(samples, "arm", 7)
    assert nxt is not None and 1 < nxt < 128 and text.plain.count("\n") <= PAGE_LINES + 250
    assert f"samples 1-{nxt} of 128 shown" in text.plain
    pages = 1
    while nxt is not None:
        text, nxt = sample_text(samples, "arm", 7, nxt)
        pages += 1
    assert pages > 1 and "128/128" in text.plain


def test_alert_scanner_feeds_edits_resumes_and_late_rows() -> None:
    """Rows inserted among the fed ones (one batch, out of order), merged cells, and two resumes between scans."""
    from steptable.alerts.engine import AlertEngine
    from steptable.app.alerting import AlertScanner
    from steptable.ingest.parsed import Parsed
    from steptable.ingest.store import RunStore

    def loss_rows(steps: list[int], bad: int | None = None, value: float = 1.0) -> Parsed:
        rows = [{"step": t, "loss": math.nan if t == bad else value} for t in steps]
        return Parsed(steps=steps, rows=rows)

    sc = AlertScanner(lambda: {}, lambda _: None)
    s = RunStore("r", "/nonexistent/metrics.jsonl")
    s.add(loss_rows(list(range(0, 40, 2))), now=math.nan)
    assert sc.scan("r", s) == []
    s.add(loss_rows([37, 35, 33], bad=37), now=math.nan)  # a late writer, descending; 37 is a NaN
    assert [(a.step, a.kind) for a in sc.scan("r", s)] == [(37, "nonfinite")]
    replay = AlertEngine()
    assert [a.step for i in range(len(s)) for a in replay.update(s.step_at(i), {"loss": s.value(i, "loss")})] == [37]

    s2 = RunStore("r2", "/nonexistent/metrics.jsonl")
    s2.add(loss_rows(list(range(30))), now=math.nan)
    sc.scan("r2", s2)
    s2.add(loss_rows(list(range(20, 26)), bad=22), now=math.nan)  # resumed at 20 (NaN at 22) ...
    s2.add(loss_rows(list(range(24, 30))), now=math.nan)  # ... and at 24, before the next scan
    assert [(a.step, a.kind) for a in sc.scan("r2", s2)] == [(22, "nonfinite")]


def test_summary_of_a_numeric_column_matches_the_general_path() -> None:
    """The array path (C loops; a chart of 200k rows blocked the UI for a second a column) gives what the
    per-value path gives, non-finite values and appended rows included."""
    import random
    from array import array

    from steptable.app.model import Summary

    rng = random.Random(3)
    values = [rng.choice([math.nan, math.inf, -math.inf, rng.uniform(-5, 5)]) for _ in range(500)]
    fast, slow = Summary(), Summary()
    for n in (0, 1, 7, 250, 500):
        fast.update(array("d", values), n)
        slow.update(list(values), n)
        assert (fast.lo, fast.hi, fast.seen) == (slow.lo, slow.hi, slow.seen)
        assert repr(fast.last) == repr(slow.last)
