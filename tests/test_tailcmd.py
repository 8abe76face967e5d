"""`steptable tail` / `summary` / `legend` end to end on files written like a real run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from steptable.demo.run import run_demo
from tests.cli.helpers import emit, follow_tail
from tests.helpers import following, run_cli, write_rows

HOSTILE = "evil\x1b[2J\x1b]0;title\x07\x1b]52;c;ZXZpbA==\x07\u202e[bold red]markup[/]"



@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    run_demo(d, steps=30, interval=0, console=False)
    return d



def test_tail_text_blocks_per_arm_same_layout(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["tail", str(demo_dir), "-n", "5", "--width", "0"], capsys)
    assert rc == 0, err
    blocks = [b for b in out.split("── ") if b.strip()]
    assert [b.split()[0] for b in blocks] == ["absorb", "routeA", "vanilla"]
    headers = {line for line in out.splitlines() if line.lstrip().startswith("step ")}
    assert len(headers) == 1  # identical column layout for every arm
    header = headers.pop()
    assert all(len(line) == len(header) for b in blocks for line in b.splitlines()[1:])
    assert out.count("\n    29 ") == 3 and "\n    25 " in out and "\n    24 " not in out


def test_tail_jsonl_is_strict_and_complete(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["tail", str(demo_dir), "-n", "0", "--format", "jsonl"], capsys)
    assert rc == 0
    def strict(c: str) -> object:
        raise ValueError(c)

    rows = [json.loads(line, parse_constant=strict) for line in out.splitlines()]
    assert len(rows) == 90
    assert {r["arm"] for r in rows} == {"vanilla", "routeA", "absorb"}
    assert all(isinstance(r["step"], int) for r in rows)
    assert any(r.get("hack_deployed", 0) is None for r in rows)  # nan written as null


def test_tail_csv_and_md(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["tail", str(demo_dir / "routeA"), "-n", "2", "--format", "csv", "--columns", "rew*,gt_s"]
    rc, out, _ = run_cli(argv, capsys)
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "run,arm,step,rew,rew_s,gt_s" and len(lines) == 3
    assert lines[1].split(",")[5].count("/") == 1
    rc, out, _ = run_cli(["tail", str(demo_dir / "routeA"), "-n", "2", "--format", "md", "--columns", "rew"], capsys)
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert table[0].startswith("| step | rew |") and table[1].startswith("|---:|") and len(table) == 4


def test_tail_hostile_strings_are_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "run" / "metrics.jsonl", [{"step": i, "loss": 0.5, "note": HOSTILE} for i in range(3)])
    for fmt in ("text", "csv", "md"):
        rc, out, _ = run_cli(["tail", str(tmp_path), "--format", fmt], capsys)
        assert rc == 0
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    assert "\x1b" not in out  # JSON escapes control characters


def test_tail_reports_bad_lines_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "metrics.jsonl"
    p.write_bytes(b'{"step": 0, "loss": 1}\n{"step": 1, "loss": \n{"step": 2, "loss": NaN}\n')
    rc, out, err = run_cli(["tail", str(p)], capsys)
    assert rc == 0
    assert "metrics.jsonl:2:" in err
    assert out.splitlines() == ["step loss", "   0    1", "   2  nan"]


def test_tail_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(["tail", str(tmp_path / "nope")], capsys)
    assert rc == 2 and "no such path" in err


def test_alerts_only_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, object]] = [{"step": i, "loss": 1.0 + 0.01 * (i % 3), "gn": 1.0 + 0.01 * (i % 2)}
                                     for i in range(60)]
    write_rows(tmp_path / "ok" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path / "ok")], capsys)
    assert rc == 0 and out == ""
    rows[40]["loss"] = math.nan
    write_rows(tmp_path / "bad" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", "--alerts-only", str(tmp_path / "bad")], capsys)
    assert rc == 1
    assert out.count("\n") == 1 and out.startswith("E [bad] step 40 loss")


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


def test_summary_and_legend(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["summary", str(demo_dir)], capsys)
    assert rc == 0 and "routeA" in out and "vanilla" in out
    rc, out, _ = run_cli(["summary", str(demo_dir), "--format", "md"], capsys)
    assert rc == 0 and "|" in out
    rc, out, _ = run_cli(["legend", str(demo_dir / "routeA")], capsys)
    assert rc == 0 and "hack_s?" in out and "rollouts" in out
    rc, out, _ = run_cli(["legend", "--schema", "routing"], capsys)
    assert rc == 0 and "auroc" in out
    rc, _, err = run_cli(["legend", "--schema", "nope"], capsys)
    assert rc == 2 and "unknown schema" in err


def test_python_dash_m_works() -> None:
    out = subprocess.run([sys.executable, "-m", "steptable", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("steptable ")




def test_one_shot_reads_an_unterminated_last_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"step": 0, "loss": 1}\n{"step": 1, "loss": 2}')  # the writer never ends the file with "\n"
    rc, out, _ = run_cli(["tail", str(p), "--format", "jsonl"], capsys)
    assert rc == 0 and [json.loads(x)["step"] for x in out.splitlines()] == [0, 1]
    p.write_text('{"step": 0, "loss": 1}\n{"step": 1, "lo')  # cut: being written
    rc, out, err = run_cli(["tail", str(p), "--format", "jsonl"], capsys)
    assert [json.loads(x)["step"] for x in out.splitlines()] == [0] and "metrics.jsonl:2:" not in err


def test_hostile_keys_are_inert_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, object]] = [{"step": i, HOSTILE: 1.5 + i, "ok\u202e": 2} for i in range(3)]
    write_rows(tmp_path / "run" / "metrics.jsonl", rows)
    outputs = []
    for argv in (["tail"], ["tail", "--format", "md"], ["tail", "--format", "csv"], ["legend"], ["summary"],
                 ["summary", "--format", "md"]):
        rc, out, err = run_cli([*argv, str(tmp_path)], capsys)
        assert rc == 0, (argv, err)
        outputs.append(out + err)
    for text in outputs:
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text


def test_summary_align_pads_columns(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, plain, _ = run_cli(["summary", str(demo_dir / "routeA")], capsys)
    _, aligned, _ = run_cli(["summary", str(demo_dir / "routeA"), "--align"], capsys)
    assert "  " not in plain.splitlines()[2] and "  " in aligned.splitlines()[2]


@pytest.mark.parametrize(("name", "rows"), [
    ("v1/exp.jsonl", [{"step": 123456 + i, "data": {"critic/score/mean": 0.5, "actor/pg_loss": 0.1 * i,
                                                       "actor/entropy": 0.6, "critic/rewards/mean": 0.5}}
                      for i in range(3)]),  # verl: a 5-cell step column
    ("run/metrics.jsonl", [{"step": 1_000_000 + i, "loss": 0.5} for i in range(3)]),  # generic, a float-sized column
    ("run/metrics.jsonl", [{"step": -2 + i, "loss": 0.5} for i in range(3)]),
])
def test_steps_are_shown_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                 rows: list[dict[str, object]]) -> None:
    """A step never degrades to a compact form (two rows reading 1.2e5 would look like one step)."""
    write_rows(tmp_path / name, rows)
    for fmt in ("text", "md"):
        rc, out, err = run_cli(["tail", str(tmp_path), "--format", fmt], capsys)
        assert rc == 0, err
        for r in rows:
            assert str(r["step"]) in out.replace("|", " ").split(), out
        if fmt == "text":
            lines = out.splitlines()
            assert len({len(line) for line in lines}) == 1


def test_trainer_state_steps_are_shown_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = {"log_history": [{"step": s, "loss": 2e-6, "grad_norm": 0.5, "learning_rate": 1e-5}
                             for s in (499_998, 499_999, 500_000)]}
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    rc, out, _ = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and all(f"\n{s} " in out for s in (499_998, 499_999, 500_000)), out


def test_rows_of_a_file_without_a_step_key_are_numbered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "run" / "metrics.jsonl", [{"loss": 1, "acc": 2}, {"loss": 2, "acc": 3}])
    rc, out, _ = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and [line.split()[0] for line in out.splitlines()] == ["step", "0", "1"]
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    assert [json.loads(line)["step"] for line in out.splitlines()] == [0, 1]
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    assert [line.split(",")[2] for line in out.splitlines()] == ["step", "0", "1"]
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "steps 0-1" in out


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


def test_lists_in_csv_and_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pair of numbers is n/d; other lists (a pair of words, nested lists) are their JSON text, not nan / a/b."""
    write_rows(tmp_path / "run" / "metrics.jsonl",
               [{"step": 0, "gt": [3, 8], "tags": ["train", "eval"], "l": [[1, 2], [3]]}])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    assert rc == 0 and out.splitlines()[1].split(",", 3)[3] == '3/8,"[""train"", ""eval""]","[[1, 2], [3]]"'
    rc, out, _ = run_cli(["tail", str(tmp_path), "--width", "0"], capsys)
    assert rc == 0 and "3/8" in out and "['train', '" in out and "[[1, 2], [3" in out and "nan" not in out


def test_csv_header_keeps_keys_apart_that_read_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Keys that are the same text once made inert (a trailing escape, a zero-width space) stay distinct columns."""
    write_rows(tmp_path / "run" / "metrics.jsonl", [{"step": 0, "loss": 1, "loss\x1b[0m": 2, "lo\u200bss": 3}])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv", "--width", "0"], capsys)
    header = out.splitlines()[0].split(",")
    assert rc == 0 and header == ["run", "arm", "step", "loss", "loss~2", "loss~3"]
    assert "\x1b" not in out and "\u200b" not in out


def test_schema_errors_are_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken steptable.toml under a directory whose name holds an escape, and an unknown --schema name: one
    clean line on stderr, nothing a terminal obeys."""
    d = tmp_path / "ev\x1b[31mil"
    write_rows(d / "run" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    (d / "steptable.toml").write_text("[schema\n")
    rc, out, err = run_cli(["tail", str(d)], capsys)
    assert rc == 2 and "steptable.toml:1: not valid TOML" in err and "\x1b" not in err + out
    write_rows(tmp_path / "ok" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    rc, out, err = run_cli(["tail", str(tmp_path / "ok"), "--schema", "no\x1b]0;t\x07pe"], capsys)
    assert rc == 2 and "unknown schema" in err and "\x1b" not in err and "\x07" not in err


def test_runs_of_different_trainers_are_laid_out_each_as_its_own(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A root holding a verl run and an SB3 run: each block has its own schema's layout (SB3's step is
    time/total_timesteps, verl's score column comes first), not the first run's layout applied to both."""
    verl = {"critic/score/mean": 0.5, "actor/pg_loss": 0.1, "actor/entropy": 0.6, "critic/rewards/mean": 0.5}
    write_rows(tmp_path / "verl" / "proj" / "exp1.jsonl", [{"step": s, "data": verl} for s in range(3)])
    write_rows(tmp_path / "sb3" / "ppo_1" / "progress.json",
               [{"time/total_timesteps": 2048 * (i + 1), "rollout/ep_rew_mean": -100.0 + i} for i in range(3)])
    rc, out, _ = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0
    sb3, verl_block = out.split("── exp1")[0], out.split("── exp1")[1]
    assert [line.split()[0] for line in sb3.splitlines()[2:]] == ["2048", "4096", "6144"]
    assert "nan" not in sb3
    assert verl_block.splitlines()[1].split()[:2] == ["step", "score"]


def test_column_filters_take_globs_and_say_when_nothing_matches(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    verl = {"critic/score/mean": 0.5, "actor/pg_loss": 0.1, "actor/entropy": 0.6, "critic/rewards/mean": 0.5}
    write_rows(tmp_path / "verl" / "proj" / "exp1.jsonl", [{"step": s, "data": verl} for s in range(3)])
    rc, out, err = run_cli(["summary", str(tmp_path), "--columns", "entropy,pg*,nomatch"], capsys)
    rows = [line.split()[0] for line in out.splitlines()[2:4]]
    assert rc == 0 and rows == ["entropy", "pg_loss"], out  # by header, by glob, in the order asked
    assert "--columns 'nomatch' matches no column" in err
    rc, out, err = run_cli(["tail", str(tmp_path), "--columns", "nomatch,pg*"], capsys)
    assert rc == 0 and out.splitlines()[0].split() == ["step", "pg_loss"]
    assert err.count("'nomatch' matches no column") == 1


def test_a_file_steptable_does_not_read_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file of a kind steptable does not read is not 'no metrics files found under' it: the message says why."""
    path = tmp_path / "notes.md"
    path.write_text("# a,b\n1,2\n")
    rc, _, err = run_cli(["tail", str(path)], capsys)
    assert rc == 2 and f"{path}: not a metrics file steptable reads" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, _, err = run_cli(["summary", str(empty)], capsys)
    assert rc == 2 and "no metrics files found under" in err


def test_nothing_readable_is_not_a_quiet_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Garbage where metrics should be: tail, tail --alerts-only, summary and legend exit 2 (CI must not pass on a
    wrong path), while an empty file that is still to be written stays a plain 'no rows yet'."""
    bad = tmp_path / "bad" / "metrics.jsonl"
    bad.parent.mkdir()
    bad.write_bytes(b"\x00\xff garbage\n" * 5)
    for argv in (["tail", str(bad)], ["tail", str(bad), "--alerts-only"], ["summary", str(bad)],
                 ["legend", str(bad)]):
        rc, _, err = run_cli(argv, capsys)
        assert rc == 2 and "no readable rows" in err, argv
    empty = tmp_path / "new" / "metrics.jsonl"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    rc, _, err = run_cli(["tail", str(empty)], capsys)
    assert rc == 0 and "no rows yet" in err


@pytest.mark.parametrize("argv", [["watch", "."], ["demo"]])
def test_the_app_without_a_terminal_says_so(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """No terminal (a pipe, CI): a one-line reason and exit 2, not an app drawing into the pipe forever."""
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2 and out == "" and "needs a terminal" in err


@pytest.mark.parametrize("argv", [["demo", "--stdout", "--steps", "-1"], ["demo", "--stdout", "--interval", "-2"],
                                  ["demo", "--stdout", "--interval", "nan"]])
def test_demo_rejects_bad_numbers(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(argv, capsys)
    assert rc == 2 and "--steps must be 1 or more" in err


@pytest.mark.parametrize("cmd", ["tail", "legend"])
def test_an_empty_schema_name_is_an_error(cmd: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "run" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    rc, _, err = run_cli([cmd, str(tmp_path), "--schema", ""], capsys)
    assert rc == 2 and "--schema needs a name" in err


def test_the_empty_key_is_named_where_it_cannot_be_a_column(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "run" / "metrics.jsonl", [{"step": 0, "": 1.5, "a": 2}, {"step": 1, "": 2.5, "a": 3}])
    rc, out, _ = run_cli(["legend", str(tmp_path)], capsys)
    assert rc == 0 and 'the empty key "" has values but no column' in out and "column filter shows" not in out
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    assert [json.loads(line)[""] for line in out.splitlines()] == [1.5, 2.5]


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
    assert steps == [0, 1, 2, 4, 3, 5]  # it used to print 0, 1, 2, 4, 4, 5: step 4 twice, step 3 never


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
    import steptable.ingest.files.follow as follow_mod

    monkeypatch.setattr(follow_mod, "BAD_TOLD", 10**9)  # (a file's bad lines are told BAD_TOLD times: here, all)
    path = tmp_path / "a" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text('{"step": 0, "loss": 1}\n')
    follower, tail, _, err = follow_tail(tmp_path, [])
    emit(follower, tail)
    kept = follower._errors.maxlen  # type: ignore[attr-defined]
    with open(path, "a") as f:
        f.write("{bad\n" * (kept + 5))
    emit(follower, tail)
    with open(path, "a") as f:
        f.write("{worse\n")
    emit(follower, tail)
    lines = err.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines[0] == "steptable: 5 more bad line(s) before these not shown"
    assert len(lines) == kept + 2 and f":{kept + 7}: malformed JSON (" in lines[-1]  # the newest, after the cap


def test_jsonl_keeps_a_rows_own_run_key_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 1, "run": "b/metrics.jsonl", "loss": 1}])
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": 1, "loss": 2}])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [(r["run"], r["loss"]) for r in rows] == [("a/metrics.jsonl", 1), ("b/metrics.jsonl", 2)]
    assert rows[0]["run~2"] == "b/metrics.jsonl"


def test_jsonl_escapes_line_breaks_and_invisible_characters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    note = "a\u2028b\u2029c\u200bd\U000e0001e\u00adf"
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 0, "note": note}])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    assert rc == 0 and len(out.splitlines()) == 1 and not any(ch in out for ch in note if not ch.isalpha())
    assert json.loads(out)["note"] == note  # escaped, not changed


def test_alert_lines_name_the_run_when_arms_share_a_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for exp in ("exp1", "exp2"):
        rows = [{"step": s, "loss": float("nan") if exp == "exp1" and s == 5 else 1.0} for s in range(10)]
        write_rows(tmp_path / exp / "seed0" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 1 and out.startswith("E [exp1/seed0/metrics.jsonl] step 5 loss non-finite"), out


def test_a_stall_still_going_on_is_an_alert_in_one_shot_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = time.time() - 7200  # one row a second, the last two hours ago
    write_rows(tmp_path / "a" / "metrics.jsonl",
               [{"step": s, "ts": start + s, "loss": 1.0 + 0.01 * (s % 3)} for s in range(100)])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and out.startswith("W [a] step 99 stalled: no row for 1"), out
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "stalled: no row for 1" in out
    # a gap the run recovered from: one-shot tail says so at the row after it, as summary does
    gap = tmp_path / "gap" / "metrics.jsonl"
    now = time.time()
    write_rows(
        gap, [{"step": s, "ts": now - 5000 + 2 * s + (3600 if s >= 150 else 0), "loss": 1.0} for s in range(200)]
    )
    rc, out, _ = run_cli(["tail", str(gap), "--alerts-only"], capsys)
    assert "step 149 stalled: no row for 60m" in out, out


def test_a_run_that_cannot_be_read_fails_a_one_shot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(5)])
    bad = tmp_path / "bad" / "metrics.jsonl"
    bad.parent.mkdir()
    bad.write_text('{"step": 0, "loss": 1.0}\n')
    bad.chmod(0)
    try:
        if os.access(bad, os.R_OK):
            pytest.skip("running as a user who can read anything")
        for argv in (["tail", "--alerts-only"], ["tail"], ["summary"]):
            rc, _, err = run_cli([*argv, str(tmp_path)], capsys)
            assert rc == 2 and f"could not read {bad}" in err, (argv, err)
    finally:
        bad.chmod(0o644)


def test_a_garbage_run_beside_a_good_one_fails_a_one_shot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_rows(tmp_path / "good" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(5)])
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "metrics.jsonl").write_text("{not json\n{nor this\n")
    rc, _, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 2 and "could not read" in err and "bad/metrics.jsonl" in err


def test_output_that_cannot_be_written_is_one_line_and_status_2(tmp_path: Path) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 1.0} for s in range(5)])
    for argv in (["summary", str(tmp_path)], ["tail", str(tmp_path)]):
        with open("/dev/full", "w") as full:
            p = subprocess.run(
                [sys.executable, "-m", "steptable", *argv], stdout=full, stderr=subprocess.PIPE, text=True
            )
        assert p.returncode == 2 and "cannot write the output" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run(
        [sys.executable, "-c", "import os, sys; os.close(1); sys.stdout = None; from steptable.cli.main import main; "
         f"sys.exit(main(['tail', {str(tmp_path)!r}]))"], stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert p.returncode == 2 and "no standard output" in p.stderr


def test_sigterm_ends_follow_with_the_alert_status(tmp_path: Path) -> None:
    import signal

    write_rows(
        tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": float("nan") if s == 3 else 1.0} for s in range(5)]
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "steptable", "tail", "-f", "--alerts-only", "--poll", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert p.stdout is not None
    line = p.stdout.readline()  # the alert: the follower is up
    p.send_signal(signal.SIGTERM)
    rest, err = p.communicate(timeout=20)
    assert "step 3 loss non-finite" in line and p.returncode == 1, (line, rest, err)


def test_summary_leaves_out_a_step_key_of_another_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"iteration": 10 * i, "loss": 1.0 / (i + 1), "reward": 0.1 * i} for i in range(100)]
    write_rows(tmp_path / "it" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    names = [line.split()[0] for line in out.splitlines()[1:] if line and line[0] != " "]
    assert rc == 0 and "loss" in names and not {"iteration", "step"} & set(names), out


def test_follow_widens_a_column_for_values_its_first_rows_never_had(tmp_path: Path) -> None:
    path = tmp_path / "a" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5, "tokens": 12} for s in range(30)])
    follower, tail, out, _ = follow_tail(tmp_path, ["--width", "0"])
    emit(follower, tail)
    write_rows(path, [{"step": 30, "loss": -1.2345e-05, "tokens": 123456789}])
    emit(follower, tail)
    last = out.getvalue().splitlines()[-1].split()  # type: ignore[attr-defined]
    assert last == ["30", "-1e-5", "123456789"]  # they read "####" and "1.2e8"


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


def test_summary_leaves_out_keys_a_schema_keeps_out_of_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl's training/global_step and tinker's progress/batch are the step again: rows an agent pays for."""
    verl = {"critic/score/mean": 0.5, "actor/pg_loss": 0.1, "actor/entropy": 0.6, "critic/rewards/mean": 0.5}
    rows = [{"step": s, "data": {**verl, "actor/pg_loss": 0.1 * s, "training/global_step": s}} for s in range(30)]
    write_rows(tmp_path / "v" / "exp.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "pg_loss" in out and "global_step" not in out, out


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


def test_an_empty_metrics_file_is_no_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trainer that made its metrics file and died before its first row: `tail --alerts-only` (a CI gate) said
    nothing and exited 0, and `legend` made up a legend of a step column. Now 2 with a reason for both; a plain
    one-shot tail still reads it as a run just started."""
    empty = tmp_path / "ci" / "metrics.jsonl"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 2 and out == "" and "no rows yet" in err and "nothing checked" in err
    rc, out, err = run_cli(["legend", str(tmp_path)], capsys)
    assert rc == 2 and out == "" and "no rows yet" in err
    rc, _, err = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and "no rows yet" in err


def test_alerts_only_over_runs_one_of_which_never_got_a_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A CI gate over a sweep where one trainer died before its first row: 0 and silence before."""
    (tmp_path / "dead").mkdir()
    (tmp_path / "dead" / "metrics.jsonl").write_bytes(b"")
    write_rows(tmp_path / "ok" / "metrics.jsonl", [{"step": s, "loss": 0.5} for s in range(3)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 2 and out == "" and "dead/metrics.jsonl: nothing checked there" in err
    rc, _, err = run_cli(["tail", str(tmp_path / "ok"), "--alerts-only"], capsys)
    assert rc == 0 and err == ""
    rc, _, _ = run_cli(["tail", str(tmp_path)], capsys)  # the table: a run just started is no error
    assert rc == 0


def test_a_column_filter_that_matches_nothing_is_no_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tail --columns nomatch` printed a step-only table and exited 0 (and said "(yet)" of a one-shot read)."""
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 0.5, "kl": 0.1} for s in range(3)])
    rc, _, err = run_cli(["tail", str(tmp_path), "--columns", "nomatch"], capsys)
    assert rc == 2 and "matches no column\n" in err and "(yet)" not in err
    rc, out, err = run_cli(["tail", str(tmp_path), "--columns", "nomatch,loss"], capsys)  # one pattern hit
    assert rc == 0 and "loss" in out and "'nomatch' matches no column" in err
    rc, _, _ = run_cli(["summary", str(tmp_path), "--columns", "nomatch"], capsys)
    assert rc == 2
    rc, _, _ = run_cli(["summary", str(tmp_path), "--columns", "kl"], capsys)
    assert rc == 0


def test_alerts_only_does_not_call_a_resumed_run_stalled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A job that died after step 150 and was relaunched from the step-100 checkpoint 5 minutes later: tail
    --alerts-only said "stalled: no row for 30.5m" at step 99 (summary and the app, rightly, said nothing)."""
    import time

    t0 = time.time() - (30 * 150 + 300 + 30 * 99) - 5  # the last row 5 s ago: a live run, not a stalled one
    first = [{"step": s, "rew": 0.5 + 0.001 * s, "ts": t0 + 30 * s} for s in range(151)]
    again = [{"step": s, "rew": 0.5 + 0.001 * s, "ts": t0 + 30 * 150 + 300 + 30 * (s - 100)} for s in range(100, 200)]
    write_rows(tmp_path / "run" / "metrics.jsonl", first + again)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert (rc, out) == (0, "")
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert "resumed 100" in out and "alerts 0" in out
