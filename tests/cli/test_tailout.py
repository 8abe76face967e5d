"""steptable.cli.tailout: ``steptable tail -f``: what a watch prints as runs grow (titles over arms taking turns,
headers once, late rows, rows changed in place, resumes and rewrites, widened columns), what it reads for new rows,
and how it ends."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from steptable import StepLogger
from steptable.alerts.replaced import read_replaced
from steptable.cli.main import _parser
from steptable.cli.tail import Tail
from steptable.ingest import Follower
from tests.alerts.helpers import loss_rows
from tests.cli.helpers import Live, emit, finish, follow_tail, start_follow, write_mixed_runs
from tests.helpers import age, following, grpo_rows, spy_whole_copies, write_rows
from tests.ingest.helpers import FollowerClock, polls_until_gone, timed_rows
from tests.logger.helpers import CUSTOM_COLS, RUN_COLS, log_rows
from tests.trainer_logs import write_clockless_verl


def _two_arms(tmp_path: Path, argv: list[str], steps: int = 30) -> Live:
    live = Live(tmp_path, argv)
    for s in range(steps):
        write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "reward": 0.5, "loss": 1.0}])
        live.step()
        write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": s, "reward": 0.6, "loss": 1.1}])
        live.step()
    return live


def test_follow_over_arms_taking_turns_costs_a_short_title_a_row(tmp_path: Path) -> None:
    lines = _two_arms(tmp_path, ["-n", "1"]).out.getvalue().splitlines()
    rows = [x for x in lines if x.strip()[:1].isdigit()]
    heads = [i for i, x in enumerate(lines) if x.split()[:1] == ["step"]]
    titles = [x for x in lines if x.startswith("──")]
    assert len(rows) == 60
    assert lines[0].startswith("── a (a/metrics.jsonl)")  # the first arm's first row carries its name too
    assert len(heads) <= 5  # the first, b's first block, then a reminder every 20 rows (not one a row: 60)
    assert all(b - a > 20 for a, b in itertools.pairwise(heads[1:]))
    assert titles[2:] == ["── a", "── b"] * 29  # a short title where the arm changes, not its file again
    assert len(lines) <= 2 * 60 + 6


def test_follow_of_one_arm_prints_its_title_once(tmp_path: Path) -> None:
    live = Live(tmp_path, [])
    for s in range(5):
        write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "reward": 0.5}])
        live.step()
    lines = live.out.getvalue().splitlines()
    assert [x.split()[0] for x in lines] == ["──", "step", "0", "1", "2", "3", "4"]


def test_follow_of_one_file_needs_no_title(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    live = Live(path, [])  # one file named: no other run can appear
    for s in range(3):
        write_rows(path, [{"step": s, "reward": 0.5}])
        live.step()
    assert [x.split()[0] for x in live.out.getvalue().splitlines()] == ["step", "0", "1", "2"]


def test_follow_md_continues_the_table_of_the_same_arm(tmp_path: Path) -> None:
    live = Live(tmp_path, ["--format", "md"])
    for s in range(4):
        write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "reward": 0.5}])
        live.step()
    text = live.out.getvalue()
    assert text.count("**a (a/metrics.jsonl)**") == 1 and text.count("| step |") == 1
    assert len([x for x in text.splitlines() if x.startswith("| ") and x[2].isdigit()]) == 4
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": 0, "reward": 0.5}])
    live.step()
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 4, "reward": 0.5}])
    live.step()
    text = live.out.getvalue()
    assert text.count("**") == 6 and text.endswith("**a**\n\n| step | reward |\n|---:|---:|\n| 4 | .5 |\n")


def test_follow_csv_prints_its_header_once_over_runs_taking_turns(tmp_path: Path) -> None:
    write_mixed_runs(tmp_path, range(1, 2))
    live = Live(tmp_path, ["--format", "csv"])
    live.step()
    for s in range(2, 5):
        write_mixed_runs(tmp_path, range(s, s + 1))
        live.step()
    rows = list(csv.reader(io.StringIO(live.out.getvalue())))
    assert sum(r[:2] == ["run", "arm"] for r in rows) == 1 and len(rows) == 9
    assert all(len(r) == len(rows[0]) for r in rows) and live.err.getvalue() == ""


def test_follow_csv_a_column_that_appears_later_adds_a_header(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(2)])
    live = Live(tmp_path, ["--format", "csv"])
    live.step()
    write_rows(path, [{"step": 2, "loss": 0.5, "eval/acc": 0.7}])
    live.step()
    rows = list(csv.reader(io.StringIO(live.out.getvalue())))
    assert rows == [["run", "arm", "step", "loss"], ["a/metrics.jsonl", "a", "0", "1.0"],
                    ["a/metrics.jsonl", "a", "1", "1.0"], ["run", "arm", "step", "loss", "eval/acc"],
                    ["a/metrics.jsonl", "a", "2", "0.5", "0.7"]]
    assert "new CSV column(s) eval/acc" in live.err.getvalue()


def test_tail_f_says_a_hang_once(tmp_path: Path) -> None:
    """tail -f that saw a run's rows arrive checks stalls by their arrival: the file's age said the same hang a
    second time ("no row for 64s" and "file untouched for 64s")."""
    from steptable.alerts.engine import AlertEngine
    from tests.cli.helpers import Live

    path = write_clockless_verl(tmp_path / "v" / "exp.jsonl", step_s=1.0)
    age(path, 120)
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    (run,) = live.follower.stores
    now = time.time()
    eng = AlertEngine()  # what the live engine looks like after rows arrived a second apart
    for i in range(20):
        eng.update(i, {"loss": 0.1}, now - 120 - 20 + i)
    live.tail.alerts.engines[run] = eng
    live.tail.check_stalls(now, list(live.follower.stores.values()))
    assert live.out.getvalue().count("stalled") == 1 and "no row for" in live.out.getvalue()
    live.tail.alerts.engines[run] = AlertEngine()  # the same hang, seen afresh: not said again
    live.tail.check_stalls(now, list(live.follower.stores.values()))
    assert live.out.getvalue().count("stalled") == 1
    fresh = Live(tmp_path, ["--alerts-only"])  # rows read at once (one-shot): the file's age is all there is
    fresh.step()
    fresh.tail.alerts.engines[run] = AlertEngine()
    fresh.tail.check_stalls(now, list(fresh.follower.stores.values()))
    assert fresh.out.getvalue().count("file untouched for") == 1


def test_tail_f_says_the_end_once_when_the_run_dies_while_followed(tmp_path: Path) -> None:
    from steptable.cli.main import _parser
    from steptable.cli.tail import Tail
    from steptable.ingest import Follower

    run = tmp_path / "r"
    sl = StepLogger(RUN_COLS, run_dir=run, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    follower = Follower([tmp_path])
    tails = {fmt: (Tail(_parser().parse_args(["tail", "-f", *fmt.split(), str(tmp_path)]), io.StringIO(),
                        io.StringIO())) for fmt in ("--alerts-only", "--format text")}

    def step() -> None:
        follower.scan()
        for t in tails.values():
            t.emit(follower)

    step()
    sl.log({"step": 1, "loss": 0.25})
    sl.__exit__(RuntimeError, RuntimeError("boom"), None)
    step()
    step()  # nothing new: told once
    alerts, text = (t.out.getvalue().splitlines() for t in tails.values())
    assert alerts == ["E [r] step 1 run ended with RuntimeError"] and tails["--alerts-only"].alerts.error_alert
    assert [line for line in text if "ended" in line] == ["── r: ended with RuntimeError ──"]
    assert text[-1].startswith("──") and text[-2].split() == ["1", "0.250"]  # under the run's last row


class Watch:
    """``steptable tail -f -n 0 --format FMT root`` (every row): each ``poll`` reads the files and returns what it
    printed."""

    def __init__(self, root: Path, fmt: str = "jsonl") -> None:
        self.fol = Follower([root], on_resume=read_replaced)
        self.out = io.StringIO()
        args = _parser().parse_args(["tail", "-f", "-n", "0", "--format", fmt, str(root)])
        self.tail = Tail(args, self.out, io.StringIO())
        self.seen = 0

    def poll(self) -> str:
        self.fol.scan()
        self.tail.emit(self.fol)
        text = self.out.getvalue()
        new, self.seen = text[self.seen :], len(text)
        return new

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.poll().splitlines()]


@pytest.mark.parametrize("step_key", ["step", "_step"])
def test_tail_f_prints_a_late_row_once_and_with_its_step(tmp_path: Path, step_key: str) -> None:
    """Two ranks' rows out of step: a row that lands before rows already printed is printed when it arrives (not a
    read later), not again with the next new rows, and names its step also when the file counts in ``_step``."""
    path = tmp_path / "run" / "metrics.jsonl"
    rows = grpo_rows(range(6), step_key=step_key)
    write_rows(path, [rows[0], rows[2]])
    watch = Watch(tmp_path)
    assert [r["step"] for r in watch.records()] == [0, 2]
    write_rows(path, [rows[1]])
    late = watch.records()
    assert [(r.get("step"), r["loss"]) for r in late] == [(1, pytest.approx(rows[1]["loss"]))]
    write_rows(path, [rows[3]])
    assert [r["step"] for r in watch.records()] == [3]
    # a read with a new row and a late one past what was printed: each printed once, in step order
    write_rows(path, [rows[5], rows[4]])
    assert [r["step"] for r in watch.records()] == [4, 5]


def test_tail_f_prints_the_last_row_again_when_its_eval_line_lands_in_the_next_read(tmp_path: Path) -> None:
    """tinker's eval line for the newest step, written after the read that printed the step's train row: the row
    is printed again with the eval score (an agent watching for a drop in eval accuracy must see it)."""
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, grpo_rows(range(3)))
    watch = Watch(tmp_path)
    assert [r["step"] for r in watch.records()] == [0, 1, 2]
    write_rows(path, [{"step": 2, "eval/acc": 0.41}])
    assert [(r["step"], r.get("eval/acc")) for r in watch.records()] == [(2, 0.41)]


def test_tail_f_prints_every_late_row_when_there_are_more_than_the_edit_log_keeps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More late rows in one read than the store's edit log keeps (4,096; 16 here): the watch prints again every
    row from the first late one on, so none of them is missing from its output."""
    from steptable.ingest import store

    monkeypatch.setattr(store, "MAX_EDITS", 16)
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, [{"step": 2 * i, "loss": 1.0} for i in range(30)])
    watch = Watch(tmp_path)
    assert len(watch.records()) == 30
    write_rows(path, [{"step": 2 * i + 1, "loss": 0.5} for i in range(20)])
    printed = [r["step"] for r in watch.records() if r["loss"] == 0.5]
    assert printed == [2 * i + 1 for i in range(20)]


def test_tail_f_of_a_run_restarted_between_reads_says_resumed_and_keeps_one_row_a_step(tmp_path: Path) -> None:
    """A GRPO run crashes after step 9 and restarts from its step-5 checkpoint, read by a later poll: the watch
    says so, and the run's rows are steps 0-15 once each (not 0-9 followed by 5-15)."""
    path = tmp_path / "run" / "metrics.jsonl"
    write_rows(path, grpo_rows(range(10)))
    watch = Watch(tmp_path, fmt="text")
    watch.poll()
    write_rows(path, grpo_rows(range(5, 16), seed=1))
    assert "resumed at step 5" in watch.poll()
    (store,) = watch.fol.stores.values()
    assert list(store.steps) == list(range(16)) and store.resumes == [5]
    assert store.value(5, "loss") == pytest.approx(grpo_rows(range(5, 16), seed=1)[0]["loss"])


@pytest.mark.parametrize("argv", [[], ["--alerts-only"], ["--format", "jsonl"]])
def test_tail_follow_never_copies_a_whole_history_for_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """An appended row costs `tail -f` the same with a million rows before it as with ten: it never takes a copy of
    the run's steps, wall times or columns."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, timed_rows(0, 50))
    write_rows(tmp_path / "b" / "metrics.jsonl", timed_rows(0, 50))
    out = io.StringIO()
    f = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", *argv, str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    whole = spy_whole_copies(monkeypatch)
    before = out.getvalue()
    write_rows(path, timed_rows(50, 53, loss=float("nan")))  # (a NaN loss: --alerts-only has something to say)
    f.scan()
    tail.emit(f)
    new = out.getvalue()[len(before) :]
    assert whole == []
    if argv == ["--alerts-only"]:
        assert "[a] step 50" in new and "loss" in new
    else:
        assert all(str(s) in new for s in (50, 51, 52)) and "49" not in new


def test_a_run_written_again_after_it_was_forgotten_is_a_run_again(
    tmp_path: Path, follower_clock: FollowerClock
) -> None:
    """A resumed run writes its deleted file again: it is found, and readers that knew the run take it for a reset
    (tail prints it from its first row again, with a note)."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, timed_rows(0, 5))
    write_rows(tmp_path / "b" / "metrics.jsonl", timed_rows(0, 1))
    f = Follower([tmp_path])
    out = io.StringIO()
    tail = Tail(_parser().parse_args(["tail", "-f", "--format", "text", str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    old = f.stores["a/metrics.jsonl"]
    shutil.rmtree(tmp_path / "a")
    polls_until_gone(f, follower_clock, "a/metrics.jsonl")
    tail.emit(f)
    assert "a/metrics.jsonl" not in f.stores
    write_rows(path, timed_rows(0, 3, loss=2.0))
    assert "a/metrics.jsonl" in f.scan()
    new = f.stores["a/metrics.jsonl"]
    assert new is not old and list(new.steps) == [0, 1, 2] and new.generation > old.generation
    assert new.version > old.version and list(old.steps) == [0, 1, 2, 3, 4]
    before = len(out.getvalue())
    tail.emit(f)
    printed = out.getvalue()[before:]
    assert "a/metrics.jsonl: file reset" in printed
    assert [ln.split()[0] for ln in printed.splitlines() if ln.split()[0].isdigit()] == ["0", "1", "2"]
    write_rows(path, timed_rows(3, 4, loss=2.0))
    assert f.scan() == {"a/metrics.jsonl"} and list(new.steps) == [0, 1, 2, 3]


def test_tail_alerts_only_says_no_stall_for_a_run_that_was_deleted(
    tmp_path: Path, follower_clock: FollowerClock
) -> None:
    """A deleted run no longer followed is no stalled run."""
    write_rows(tmp_path / "a" / "metrics.jsonl", timed_rows(0, 40))
    write_rows(tmp_path / "b" / "metrics.jsonl", timed_rows(0, 40))
    out = io.StringIO()
    f = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", "--alerts-only", str(tmp_path)]), out, io.StringIO())
    f.scan()
    tail.emit(f)
    shutil.rmtree(tmp_path / "a")
    changed = polls_until_gone(f, follower_clock, "a/metrics.jsonl")
    if changed:  # (as the follow loop does: emit on a change)
        tail.emit(f)
    tail.check_stalls(1.7e9 + 1000, list(f.stores.values()))
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and "[b]" in lines[0] and "stalled" in lines[0], lines


def test_follow_notices_a_replaced_file_with_as_many_rows(tmp_path: Path) -> None:
    path = tmp_path / "arm" / "metrics.jsonl"
    write_rows(path, [{"step": i, "loss": 0.1 * i} for i in range(3)])
    with following(tmp_path) as (seen, wait):
        wait(3)
        new = tmp_path / "new.jsonl"
        write_rows(new, [{"step": 10 + i, "loss": 0.5} for i in range(3)])  # a relaunch: same number of rows
        os.replace(new, path)
        wait(6)
    assert seen == [0, 1, 2, 10, 11, 12]


def test_tail_f_after_a_rewrite_says_the_new_runs_replaced_alerts(tmp_path: Path) -> None:
    """The file truncated and written again (a new run with its own restart): tail -f --alerts-only reads the new
    content over again and says the new run's NaN before its restart."""
    from tests.cli.helpers import Live

    rng = random.Random(4)
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, loss_rows(range(1000), rng, nan_from=990) + loss_rows(range(500, 600), rng))
    live = Live(tmp_path, ["--alerts-only"])
    live.step()
    assert live.out.getvalue().count("non-finite") == 1
    path.write_text("")  # truncated and written again in one go (no read in between)
    write_rows(path, loss_rows(range(300), rng, nan_from=290) + loss_rows(range(200, 260), rng))
    live.step()
    assert "step 290 loss non-finite (NaN)" in live.out.getvalue(), live.out.getvalue()


def test_a_description_that_arrives_later_lays_the_run_out_again(tmp_path: Path) -> None:
    from tests.cli.helpers import emit, follow_tail

    d = tmp_path / "run"
    rows: list[dict[str, object]] = [{"step": s, "reward/mean": 0.5, "kl": 0.01} for s in range(3)]
    log_rows(d, CUSTOM_COLS, rows)
    info = (d / "steptable.json").read_text()
    (d / "steptable.json").unlink()
    follower, tail, out, _ = follow_tail(tmp_path, ["--width", "0"])
    emit(follower, tail)
    (d / "steptable.json").write_text(info)  # (written by the logger a moment after its first row)
    with open(d / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 3, "reward/mean": 0.25, "kl": 0.02}) + "\n")
    emit(follower, tail)
    lines = out.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines[1].split() == ["step", "reward", "kl"] and lines[-2].split() == ["step", "rew", "kl"]
    assert lines[-1].split() == ["3", "+0.250", "2.00e-2"]  # the logger's own formats


def test_a_watch_of_nothing_readable_ends_with_status_2(tmp_path: Path) -> None:
    """As the one-shot read says: lines that are not metrics must not pass a CI gate as "no alerts" (status 0)."""
    bad = tmp_path / "bad" / "metrics.jsonl"
    bad.parent.mkdir()
    bad.write_text('hello world\nnot json\n{"a": \n')
    p = start_follow("--alerts-only", str(bad))
    assert p.stderr is not None
    first = p.stderr.readline()  # the first bad line: the file was read
    p.send_signal(signal.SIGTERM)
    _, err = finish(p)
    assert "malformed" in first
    assert p.returncode == 2 and f"no readable rows in {bad}" in err, (p.returncode, err)


def test_a_watch_that_never_found_a_run_ends_with_status_2(tmp_path: Path) -> None:
    """Waiting for a run is what -f is for, but a watch that ends without one says so, as the one-shot read does."""
    runs = tmp_path / "runs"
    p = start_follow("--alerts-only", str(runs))
    assert p.stderr is not None
    assert "no such path (yet)" in p.stderr.readline()  # the handlers are set before this line
    runs.mkdir()  # there now, but no run appears in it
    p.send_signal(signal.SIGTERM)
    _, err = finish(p)
    assert p.returncode == 2 and f"no metrics files found under {runs}" in err, (p.returncode, err)


def test_a_watch_of_a_file_that_never_got_a_row_ends_with_status_2(tmp_path: Path) -> None:
    """A trainer that made its metrics file and hung before the first row: a watch that ends then checked nothing
    (2), where a one-shot read takes it for a run just started (0, "no rows yet")."""
    from steptable.cli.tail import _status

    empty = tmp_path / "run" / "metrics.jsonl"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    for live, status, said in ((True, 2, "no rows in"), (False, 0, "no rows yet in")):
        argv = ["tail", *(["-f"] if live else []), str(empty)]
        args = _parser().parse_args(argv)
        follower, err = Follower(args.paths), io.StringIO()
        tail = Tail(args, io.StringIO(), err)
        follower.scan()
        tail.emit(follower)
        assert _status(args, follower, tail, err, live=live) == status and f"{said} {empty}" in err.getvalue()


def test_a_run_that_appears_while_following_is_printed_whole_and_the_watch_ends_with_0(tmp_path: Path) -> None:
    """A directory not there at the start; a run of 30 rows appears in it at once, after the first view of a run
    that was there: all 30 are printed (-n 5 is for the runs there at the start, not steps 25-29 of this one), and
    stopping then is a success."""
    write_rows(tmp_path / "old" / "metrics.jsonl", [{"step": s, "reward": 0.5} for s in range(10)])
    runs = tmp_path / "runs"
    p = start_follow("-n", "5", "--format", "jsonl", str(tmp_path / "old"), str(runs))
    assert p.stdout is not None
    first = [json.loads(p.stdout.readline())["step"] for _ in range(5)]  # the first view is printed
    staged = tmp_path / "staged"
    write_rows(staged / "late" / "metrics.jsonl", [{"step": s, "reward": 0.5} for s in range(30)])
    os.replace(staged, runs)  # the whole run at once: no partial read can explain a missing row
    steps: list[int] = []
    while not steps or steps[-1] != 29:  # the last row is printed either way: no wait that could hang
        row = json.loads(p.stdout.readline())
        assert row["arm"] == "late", row
        steps.append(row["step"])
    p.send_signal(signal.SIGTERM)
    _, err = finish(p)
    assert first == [5, 6, 7, 8, 9] and steps == list(range(30))
    assert p.returncode == 0 and "Traceback" not in err, (p.returncode, err)


@pytest.mark.parametrize("fmt", ["text", "jsonl", "csv", "md"])
def test_a_run_found_after_the_start_is_printed_from_its_first_row(tmp_path: Path, fmt: str) -> None:
    """-n is the first view of the runs there at the start; a run found later is new output in full, in every
    format."""
    write_rows(tmp_path / "old" / "metrics.jsonl", [{"step": s, "reward": 5000 + s, "loss": 0.25} for s in range(50)])
    out = io.StringIO()
    follower = Follower([tmp_path])
    tail = Tail(_parser().parse_args(["tail", "-f", "-n", "5", "--format", fmt, str(tmp_path)]), out, io.StringIO())
    follower.scan()
    tail.emit(follower)
    first = out.getvalue()
    assert "5045" in first and "5044" not in first  # the first view: the last 5 rows
    write_rows(tmp_path / "new" / "metrics.jsonl", [{"step": s, "reward": 7000 + s, "loss": 0.25} for s in range(50)])
    follower.scan()
    tail.emit(follower)
    new = out.getvalue()[len(first) :]
    missing = [s for s in range(50) if str(7000 + s) not in new]
    assert missing == [], new


def test_follow_prints_appended_rows_once(tmp_path: Path) -> None:
    path = tmp_path / "arm" / "metrics.jsonl"
    write_rows(path, [{"step": i, "loss": 0.1 * i} for i in range(3)])
    with following(tmp_path) as (seen, wait):
        wait(3)
        with open(path, "a") as f:  # a row written in two pieces: printed once, when complete
            f.write('{"step": 3, "lo')
            f.flush()
            time.sleep(0.3)
            f.write('ss": 0.3}\n{"step": 4, "loss": 0.4}\n')
        wait(5)
    assert seen == [0, 1, 2, 3, 4]


def test_a_live_run_past_the_step_column_widens_it(tmp_path: Path) -> None:
    """``tail -f``: when steps outgrow the step column (verl's is 5 cells), the layout is made again, with a new
    header, instead of printing 1e5 for every later step."""
    import io

    from steptable.cli.main import _parser
    from steptable.cli.tail import Tail
    from steptable.ingest import Follower

    path = tmp_path / "v1" / "exp.jsonl"
    verl = {"critic/score/mean": 0.5, "actor/pg_loss": 0.1, "actor/entropy": 0.6, "critic/rewards/mean": 0.5}
    write_rows(path, [{"step": s, "data": verl} for s in (99_998, 99_999)])
    args = _parser().parse_args(["tail", "-f", str(tmp_path)])
    out = io.StringIO()
    follower, tail = Follower([tmp_path]), Tail(args, out, io.StringIO())
    follower.scan()
    tail.emit(follower)
    write_rows(path, [{"step": s, "data": verl} for s in (100_000, 100_001)])
    follower.scan()
    tail.emit(follower)
    lines = out.getvalue().splitlines()
    # (live output names its run from the first row on: more runs may appear)
    assert [line.split()[0] for line in lines] == ["──", "step", "99998", "99999", "step", "100000", "100001"]
    assert len(lines[4]) == len(lines[5]) == len(lines[6]) == len(lines[1]) + 1


def test_follow_prints_a_row_again_when_a_later_line_merges_into_it(tmp_path: Path) -> None:
    """tinker writes a step's eval metrics as a second line with the same step; torchtune writes one metric a line."""
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(3)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--format", "jsonl"])
    emit(follower, tail)
    write_rows(path, [{"step": 2, "eval/acc": 0.77}])
    emit(follower, tail)
    write_rows(path, [{"step": 3, "loss": 0.5}])
    emit(follower, tail)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert [r["step"] for r in rows] == [0, 1, 2, 2, 3]
    assert rows[3]["eval/acc"] == 0.77 and rows[3]["loss"] == 1.0  # the whole row as it is now


def test_follow_prints_a_late_row_once_and_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in (0, 1, 2, 4)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--format", "jsonl"])
    emit(follower, tail)
    write_rows(path, [{"step": 3, "loss": 0.3}])  # out of order: a second writer, a late evaluation
    emit(follower, tail)
    write_rows(path, [{"step": 5, "loss": 0.5}])
    emit(follower, tail)
    steps = [json.loads(line)["step"] for line in out.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert steps == [0, 1, 2, 4, 3, 5]  # (not 0, 1, 2, 4, 4, 5: step 4 twice, step 3 never)


def test_follow_alerts_see_a_value_merged_into_a_fed_row(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(20)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--alerts-only"])
    emit(follower, tail)
    write_rows(path, [{"step": 20, "lr": 0.1}])
    emit(follower, tail)
    with open(path, "a") as f:
        f.write('{"step": 20, "loss": NaN}\n')
    emit(follower, tail)
    text = out.getvalue()  # type: ignore[attr-defined]
    assert "step 20 loss non-finite" in text and text.count("non-finite") == 1


def test_follow_after_a_resume_prints_the_new_rows(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(10)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--format", "jsonl", "-n", "0"])
    emit(follower, tail)
    write_rows(path, [{"step": s, "loss": 2.0} for s in range(5, 12)])  # restarted from the step-5 checkpoint
    emit(follower, tail)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert [r["step"] for r in rows] == [*range(10), *range(5, 12)] and all(r["loss"] == 2.0 for r in rows[10:])


def test_follow_keeps_reporting_bad_lines_past_the_kept_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import steptable.ingest.files.reports as reports_mod

    monkeypatch.setattr(reports_mod, "BAD_TOLD", 10**9)  # (a file's bad lines are told BAD_TOLD times: here, all)
    path = tmp_path / "a" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text('{"step": 0, "loss": 1}\n')
    follower, tail, _, err = follow_tail(tmp_path, [])
    emit(follower, tail)
    kept = follower.reports.kept.maxlen  # type: ignore[attr-defined]
    with open(path, "a") as f:
        f.write("{bad\n" * (kept + 5))
    emit(follower, tail)
    with open(path, "a") as f:
        f.write("{worse\n")
    emit(follower, tail)
    lines = err.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines[0] == "steptable: 5 more bad line(s) before these not shown"
    assert len(lines) == kept + 2 and f":{kept + 7}: malformed JSON (" in lines[-1]  # the newest, after the cap


def test_follow_widens_a_column_for_values_its_first_rows_never_had(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5, "tokens": 12} for s in range(30)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--width", "0"])
    emit(follower, tail)
    write_rows(path, [{"step": 30, "loss": -1.2345e-05, "tokens": 123456789}])
    emit(follower, tail)
    last = out.getvalue().splitlines()[-1].split()  # type: ignore[attr-defined]
    # the tokens read "1.2e8" before; the loss's notation is chosen again for it (.5 had one decimal): thousandths,
    # whose '-.000' would read as zero, so -1.2e-5 is written on its own in its cells
    assert last == ["30", "-1e-5", "123456789"]


def test_follow_after_two_resumes_and_an_edit_between_reads(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(11)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--format", "jsonl", "-n", "0"])
    emit(follower, tail)
    write_rows(path, [{"step": 3, "eval/acc": 0.9}])  # merged into a printed row ...
    write_rows(path, [{"step": s, "loss": 2.0 + s / 100} for s in range(5, 10)])  # ... a restart from step 5 ...
    write_rows(path, [{"step": s, "loss": 3.0} for s in range(8, 10)])  # ... and another from step 8
    emit(follower, tail)
    rows = [json.loads(line) for line in out.getvalue().splitlines()][11:]  # type: ignore[attr-defined]
    assert [r["step"] for r in rows] == [3, 5, 6, 7, 8, 9] and rows[0]["eval/acc"] == 0.9
    assert [r["loss"] for r in rows[1:]] == [2.05, 2.06, 2.07, 3.0, 3.0]


def test_follow_with_more_edits_than_the_store_lists_prints_from_the_oldest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from steptable.ingest import store

    monkeypatch.setattr(store, "MAX_EDITS", 16)
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 1.0} for s in range(100)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--format", "jsonl", "-n", "3"])
    emit(follower, tail)
    write_rows(path, [{"step": s, "eval/acc": 0.5} for s in range(60, 90)])  # an evaluator: 30 merges in one read
    emit(follower, tail)
    steps = [json.loads(line)["step"] for line in out.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert steps == [97, 98, 99, *range(60, 100)]  # from the oldest changed step on, not the whole history


def test_follow_into_a_full_disk_is_one_line_and_status_2(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": 0, "loss": 1.0}])
    with open("/dev/full", "w") as full:
        p = subprocess.Popen(
            [sys.executable, "-m", "steptable", "tail", "-f", "--alerts-only", "--poll", "0.05", str(tmp_path)],
            stdout=full, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(1.5)
        with open(path, "a") as f:
            f.write('{"step": 1, "loss": NaN}\n')  # the alert line is what fails to be written
        _, err = p.communicate(timeout=20)
    assert p.returncode == 2 and "cannot write the output" in err and "Traceback" not in err, err


def test_follow_a_csv_rewritten_from_the_top_with_a_new_key(tmp_path: Path) -> None:
    """SB3 rewrites progress.csv from the top when a key appears (older rows get empty cells): the rows already
    shown stay shown once, the new column arrives; a rewrite with other rows is a new file."""
    path = tmp_path / "ppo" / "progress.csv"
    path.parent.mkdir()
    path.write_text("time/total_timesteps,rollout/ep_rew_mean\n2048,-120.5\n4096,-80.25\n")
    follower, tail, out, _ = follow_tail(tmp_path, ["--format", "jsonl", "-n", "0"])
    emit(follower, tail)
    path.write_text(
        "time/total_timesteps,rollout/ep_rew_mean,train/loss\n2048,-120.5,\n4096,-80.25,\n6144,-60.0,0.5\n"
    )
    emit(follower, tail)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert [r["time/total_timesteps"] for r in rows] == [2048, 4096, 6144] and rows[-1]["train/loss"] == 0.5
    path.write_text("time/total_timesteps,rollout/ep_rew_mean\n100,1.0\n")  # a new run in its place
    emit(follower, tail)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert [r["time/total_timesteps"] for r in rows][3:] == [100]


def test_follow_never_writes_a_decayed_value_as_zero_digits_after_another_run_appears(tmp_path: Path) -> None:
    """The review's trackio project, in JSONL: a run whose loss decayed to 5e-6 reads ``5.00e-6``; a second run
    (2, 1, .667 ... .004) appears and the two share one notation, thousandths: the first run's next rows read
    ``4.99e-6`` on their own, not ``.00000``."""
    big = tmp_path / "big" / "metrics.jsonl"
    write_rows(big, [{"step": s, "loss": 1 / (s + 1)} for s in range(199_000, 200_000)])
    follower, tail, out, _ = follow_tail(tmp_path, ["-n", "2"])
    emit(follower, tail)
    assert [r.split()[1] for r in out.getvalue().splitlines()[-2:]] == ["5.00e-6", "5.00e-6"]
    write_rows(tmp_path / "second" / "metrics.jsonl", [{"step": s, "loss": 2 / (s + 1)} for s in range(500)])
    emit(follower, tail)
    write_rows(big, [{"step": s, "loss": 1 / (s + 1)} for s in range(200_400, 200_403)])
    emit(follower, tail)
    last = [r.split() for r in out.getvalue().splitlines()[-3:]]
    assert last == [["200400", "4.99e-6"], ["200401", "4.99e-6"], ["200402", "4.99e-6"]]
