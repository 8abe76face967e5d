"""The CLI review's findings 2-7: missing paths, columns past the width, tail -f over arms, CSV of mixed runs, the
demo behind a closed pipe, and alerts in the chosen format."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from steptable.cli.main import main
from tests.cli.helpers import Live
from tests.helpers import run_cli, write_rows


# ---------------------------------------------------------------------------------------- 2. missing paths
@pytest.mark.parametrize(
    ("argv", "shown"),
    [(["tail"], "1.5"), (["tail", "--alerts-only"], ""), (["summary"], "steps 0-2"), (["legend"], "reward")],
)
def test_a_missing_path_beside_a_good_one_is_named_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], shown: str
) -> None:
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": s, "reward": 1.5} for s in range(3)])
    typo = tmp_path / "typo"
    rc, out, err = run_cli([*argv, str(tmp_path / "good"), str(typo)], capsys)
    assert rc == 2  # a CI gate over armA and a mistyped armB must not pass as "no alerts"
    assert f"no such path: {typo}" in err
    assert shown in out  # what the good path gives is still printed


def test_all_paths_there_is_still_a_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 0, "reward": 1.0}])
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": 0, "reward": 1.0}])
    rc, _, err = run_cli(["tail", "--alerts-only", str(tmp_path / "a"), str(tmp_path / "b")], capsys)
    assert rc == 0 and err == ""


# ---------------------------------------------------------------------------------------- 3. width
def _wide(tmp_path: Path) -> Path:
    rows = [{"step": s, **{f"metric_{i:02d}": 0.1 * i + s for i in range(40)}} for s in range(3)]
    write_rows(tmp_path / "wide" / "metrics.jsonl", rows)
    return tmp_path / "wide"


def test_csv_and_md_carry_every_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wide = _wide(tmp_path)
    rc, out, err = run_cli(["tail", str(wide), "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))
    assert rc == 0 and err == "" and len(rows[0]) == 43 and all(len(r) == 43 for r in rows)
    rc, out, err = run_cli(["tail", str(wide), "--format", "md"], capsys)
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert rc == 0 and err == "" and "metric_39" in table[0].replace("\\_", "_")


def test_text_says_how_many_columns_it_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wide = _wide(tmp_path)
    rc, out, err = run_cli(["tail", str(wide)], capsys)
    assert rc == 0 and "metric_39" not in out
    assert err.count("\n") == 1 and "21 column(s) left out to fit 200 cells" in err and "--width 0" in err
    rc, out, err = run_cli(["tail", str(wide), "--width", "0"], capsys)
    assert "metric_39" in out and err == ""
    live = Live(wide, [])
    live.step()
    write_rows(wide / "metrics.jsonl", [{"step": 3, "metric_00": 1.0, "late": 2.0}])
    live.step()
    assert live.err.getvalue().count("left out") == 1  # said once, not at every new layout


# ---------------------------------------------------------------------------------------- 4. tail -f over arms
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
    assert len(heads) <= 5  # the first, b's first block, then a reminder every 20 rows (was one a row: 60)
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


# ---------------------------------------------------------------------------------------- 5. csv of mixed runs
def _mixed(root: Path, steps: range) -> None:
    verl = {"actor/pg_loss": 0.1, "critic/score/mean": 0.2, "actor/entropy": 0.5}
    write_rows(root / "verl" / "exp.jsonl", [{"step": s, "data": verl} for s in steps])
    write_rows(root / "gen" / "metrics.jsonl", [{"step": s, "foo": 0.1, "bar": s} for s in steps])


def test_csv_of_runs_with_different_columns_is_one_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _mixed(tmp_path, range(1, 5))
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))
    head = rows[0]
    assert rc == 0 and sum(r[:2] == ["run", "arm"] for r in rows) == 1
    assert {"foo", "bar", "critic/score/mean", "actor/pg_loss"} <= set(head)
    assert len(rows) == 9 and all(len(r) == len(head) for r in rows)
    gen = [dict(zip(head, r, strict=True)) for r in rows[1:] if r[1] == "gen"]
    assert [g["bar"] for g in gen] == ["1", "2", "3", "4"] and all(g["actor/pg_loss"] == "" for g in gen)


def test_follow_csv_prints_its_header_once_over_runs_taking_turns(tmp_path: Path) -> None:
    _mixed(tmp_path, range(1, 2))
    live = Live(tmp_path, ["--format", "csv"])
    live.step()
    for s in range(2, 5):
        _mixed(tmp_path, range(s, s + 1))
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


# ---------------------------------------------------------------------------------------- 6. demo | head
def test_demo_stops_quietly_when_its_reader_leaves(tmp_path: Path) -> None:
    """`steptable demo --stdout | head -1` went on writing for 2000 steps x 0.5 s (17 minutes)."""
    cmd = [sys.executable, "-m", "steptable", "demo", "--stdout", "--dir", str(tmp_path), "--steps", "100000",
           "--interval", "0.01"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "CI": "true"})
    assert proc.stdout is not None and proc.stderr is not None
    try:
        first = proc.stdout.readline()  # rows are flushed as they are made (block buffering held them back)
        proc.stdout.close()  # the reader leaves, as head does
        rc = proc.wait(timeout=120)  # (the old demo ran on for 100000 steps: this guard fails it)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert first and rc == 0 and err == ""
    rows = (tmp_path / "routeA" / "metrics.jsonl").read_text().count("\n")
    assert 0 < rows < 100000 and (tmp_path / "routeA" / "table.txt").exists()  # closed as a run is


# ---------------------------------------------------------------------------------------- 7. alerts formats
def _nan_run(root: Path) -> Path:
    rows: list[dict[str, Any]] = [{"step": s, "reward": 0.5 + 0.01 * (s % 3)} for s in range(50)]
    write_rows(root / "nanrew" / "metrics.jsonl", rows)
    with open(root / "nanrew" / "metrics.jsonl", "a") as f:
        f.write('{"step": 50, "reward": NaN}\n')
    return root / "nanrew"


def test_alerts_follow_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["tail", str(_nan_run(tmp_path)), "--alerts-only", "--format", "jsonl"], capsys)
    recs = [json.loads(line) for line in out.splitlines()]
    assert rc == 1 and len(recs) == 1
    rec = recs[0]
    assert rec["level"] == "E" and rec["step"] == 50 and rec["column"] == "reward" and rec["arm"] == "nanrew"
    assert rec["run"] == "metrics.jsonl" and rec["kind"] == "nonfinite" and "non-finite" in rec["message"]


def test_alerts_follow_csv_and_md(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _nan_run(tmp_path)
    rc, out, _ = run_cli(["tail", str(run), "--alerts-only", "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))
    assert rc == 1 and rows[0] == ["run", "arm", "step", "level", "column", "kind", "message"]
    assert rows[1][:6] == ["metrics.jsonl", "nanrew", "50", "E", "reward", "nonfinite"] and len(rows) == 2
    rc, out, _ = run_cli(["tail", str(run), "--alerts-only", "--format", "md"], capsys)
    assert rc == 1 and out.startswith("- E \\[nanrew\\] step 50 reward non-finite") and out.count("\n") == 1


def test_alerts_in_jsonl_keep_hostile_names_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arm = tmp_path / "evil\x1b[2J\u202e"
    write_rows(arm / "metrics.jsonl", [{"step": s, "reward": 0.5} for s in range(3)])
    with open(arm / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "reward": NaN}\n')
    for fmt in ("jsonl", "csv", "md", "text"):
        rc, out, _ = run_cli(["tail", str(arm), "--alerts-only", "--format", fmt], capsys)
        assert rc == 1 and "\x1b" not in out and "\u202e" not in out and out


def test_columns_pick_the_keys_of_jsonl_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "a" / "metrics.jsonl"
    run.parent.mkdir()
    run.write_text('{"step":0,"score":1,"loss":2,"kl":3}\n{"step":1,"score":1.5,"loss":2,"kl":3}\n')
    assert main(["tail", str(tmp_path), "--format", "jsonl", "--columns", "sc*,kl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [sorted(r) for r in rows] == [["arm", "kl", "run", "score", "step"]] * 2
