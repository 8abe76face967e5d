"""steptable.cli.tail: ``steptable tail`` one-shot reads end to end: the table per arm, hostile strings and keys
inert, bad lines on stderr, steps shown exactly, column filters, and a status that fails on what cannot be read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import Live, block_titles, write_wide_run
from tests.helpers import run_cli, write_rows
from tests.library_logs import write_lightning_rows, write_sb3_rows, write_trainer_state, write_verl_rows
from tests.schemas.helpers import seen

HOSTILE = "evil\x1b[2J\x1b]0;title\x07\x1b]52;c;ZXZpbA==\x07\u202e[bold red]markup[/]"


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
    assert out.splitlines() == ["step loss", "   0    1", "   2  NaN"]


def test_tail_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(["tail", str(tmp_path / "nope")], capsys)
    assert rc == 2 and "no such path" in err


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
    if name.startswith("v1/"):  # through verl's own file logger
        write_verl_rows(tmp_path / name, [(r["step"], r["data"]) for r in rows])
    else:
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
    write_trainer_state(tmp_path / "trainer_state.json", [{"step": s, "loss": 2e-6, "grad_norm": 0.5,
                                                           "learning_rate": 1e-5} for s in (499_998, 499_999, 500_000)],
                        500_000)
    rc, out, _ = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and all(f"\n{s} " in out for s in (499_998, 499_999, 500_000)), out


@pytest.mark.parametrize("tracker", ["wandb", "trackio"])
def test_a_trainers_tracker_run_shows_the_trainers_steps_not_the_trackers_count(
        hf_tracked: Path, capsys: pytest.CaptureFixture[str], tracker: str) -> None:
    steps = sorted({e["step"] for e in json.loads((hf_tracked / "history.json").read_text())})
    rc, out, _ = run_cli(["tail", "--format", "jsonl", str(hf_tracked / tracker)], capsys)
    assert rc == 0 and [json.loads(line)["step"] for line in out.splitlines()] == steps, out
    rc, out, _ = run_cli(["tail", str(hf_tracked / tracker)], capsys)
    lines = [line for line in out.splitlines() if not line.startswith("──")]
    header = lines[0].split()
    assert rc == 0 and header[0] == "step" and "_step" not in header, out  # (the tracker's count is bookkeeping)
    assert [int(line.split()[0]) for line in lines[1:]] == steps, out


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
    write_verl_rows(tmp_path / "verl" / "proj" / "exp1.jsonl", [(s, verl) for s in range(3)])
    write_sb3_rows(tmp_path / "sb3" / "ppo_1",
                   [{"time/total_timesteps": 2048 * (i + 1), "rollout/ep_rew_mean": -100.0 + i} for i in range(3)],
                   fmt="json")
    rc, out, _ = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0
    sb3, verl_block = out.split("── exp1")[0], out.split("── exp1")[1]
    assert [line.split()[0] for line in sb3.splitlines()[2:]] == ["2048", "4096", "6144"]
    assert "nan" not in sb3
    assert verl_block.splitlines()[1].split()[:2] == ["step", "score"]


def test_column_filters_take_globs_and_say_when_nothing_matches(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    verl = {"critic/score/mean": 0.5, "actor/pg_loss": 0.1, "actor/entropy": 0.6, "critic/rewards/mean": 0.5}
    write_verl_rows(tmp_path / "verl" / "proj" / "exp1.jsonl", [(s, verl) for s in range(3)])
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
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    assert [json.loads(line)[""] for line in out.splitlines()] == [1.5, 2.5] and "empty key" not in err
    rc, out, err = run_cli(["tail", str(tmp_path)], capsys)  # (the table left it out without a word)
    assert rc == 0 and err.count('steptable tail: the empty key "" has values but no column') == 1
    rc, out, err = run_cli(["tail", str(tmp_path), "--columns", "a"], capsys)
    assert rc == 0 and "empty key" not in err  # (not asked for)


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


def test_an_empty_metrics_file_is_no_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trainer that made its metrics file and died before its first row: `tail --alerts-only` (a CI gate) and
    `legend` exit 2 with a reason (not 0 and silence, nor a legend of a step column); a plain one-shot tail still
    reads it as a run just started."""
    empty = tmp_path / "ci" / "metrics.jsonl"
    empty.parent.mkdir()
    empty.write_bytes(b"")
    rc, out, err = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 2 and out == "" and "no rows yet" in err and "nothing checked" in err
    rc, out, err = run_cli(["legend", str(tmp_path)], capsys)
    assert rc == 2 and out == "" and "no rows yet" in err
    rc, _, err = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and "no rows yet" in err


def test_a_column_filter_that_matches_nothing_is_no_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tail --columns nomatch` printed a step-only table and exited 0 (and said "(yet)" of a one-shot read)."""
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": s, "loss": 0.5, "kl": 0.1} for s in range(3)])
    rc, out, err = run_cli(["tail", str(tmp_path), "--columns", "nomatch"], capsys)
    assert rc == 2 and "matches no column\n" in err and "(yet)" not in err
    assert out == ""  # (not a table of the step alone before the error: an agent's tool reply held it)
    rc, out, err = run_cli(["tail", str(tmp_path), "--columns", "nomatch,loss"], capsys)  # one pattern hit
    assert rc == 0 and "loss" in out and "'nomatch' matches no column" in err
    rc, _, _ = run_cli(["summary", str(tmp_path), "--columns", "nomatch"], capsys)
    assert rc == 2
    rc, _, _ = run_cli(["summary", str(tmp_path), "--columns", "kl"], capsys)
    assert rc == 0


def test_text_says_how_many_columns_it_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wide = write_wide_run(tmp_path)
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


#: keys that read alike: seven that read "loss", two that read "café", one homoglyph (Cyrillic dze)
LOSSES = ["loss", "loss\u200c", "loss\u034f", "loss\ufe00", "lo\u200dss", "loss\U000e0100", "loss\u180b"]


CAFES = ["caf\u00e9", "cafe\u0301"]


DZE = "los\u0455"


def test_tail_header_row_reads_each_column_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = [*LOSSES, *CAFES, DZE]
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": s, **{k: i + s / 10 for i, k in enumerate(keys)}}
                                                  for s in range(3)])
    rc, out, _ = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0
    header = [seen(h) for h in out.splitlines()[0].split()]
    assert len(header) == 1 + len(keys) and len(set(header)) == len(header), header


# an OSC 52 (clipboard) with no BEL or ST after it, behind a CSI
OPEN_OSC = "armA\x1b[2JB\x1b]52;c;ZXZpb"


def test_tail_says_the_bad_line_and_the_path_of_a_run_named_with_an_open_osc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / OPEN_OSC
    write_rows(run / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    with open(run / "metrics.jsonl", "a") as f:
        f.write("{bad\n")
    write_rows(run / "metrics.jsonl", [{"step": 1, "loss": 0.5}])
    rc, out, err = run_cli(["tail", "--format", "md", str(run)], capsys)
    assert rc == 0 and "\x1b" not in out + err
    assert f"{tmp_path}/armAB52;c;ZXZpb/metrics.jsonl:2: malformed JSON" in err  # the warning, not the name cut short
    assert "**armAB52;c;ZXZpb (metrics.jsonl)**" in out  # the title with its file


def test_a_file_bad_on_every_line_is_told_a_few_times_not_on_every_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that logged a fractional step on every row: 10,000 lines of stderr for an agent to read. Now the first
    BAD_TOLD of each file, one line saying the rest are counted, and the count in the summary."""
    from steptable.ingest.files.reports import BAD_TOLD
    from tests.helpers import run_cli

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.jsonl").write_text("".join(json.dumps({"step": i / 4, "loss": i}) + "\n"
                                                         for i in range(400)))
    rc, out, err = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and "bad 300" in out
    lines = err.splitlines()
    assert len(lines) == 2 * (BAD_TOLD + 1), lines[-3:]
    assert sum("the rest are counted, not told" in x for x in lines) == 2
    # a file's problems as a whole (not a line of it) are always told
    (tmp_path / "c.jsonl").write_bytes(b"\xff\xfe garbage\n" * 50)
    _, _, err = run_cli(["legend", str(tmp_path)], capsys)
    assert len(err.splitlines()) <= 3 * (BAD_TOLD + 1)


def test_a_row_cut_short_does_not_take_the_row_written_after_it(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Two arms share a file; armA is killed mid-row and armB appends its row to the cut one: armB's row is read (the
    line is not one malformed line). A cut row's own nested object is not taken for a row."""
    from tests.helpers import run_cli

    rows = [json.dumps({"step": s, "arm": arm, "rew": 0.5}) for s in range(10) for arm in ("armA", "armB")]
    glued = '{"step": 10, "arm": "armA", "rew": 0.' + json.dumps({"step": 10, "arm": "armB", "rew": 0.7})
    cut_nested = '{"step": 11, "arm": "armB", "rew": 0.5, "cfg": {"a": 1}'  # cut before its last brace
    (tmp_path / "metrics.jsonl").write_text("\n".join([*rows, glued, cut_nested]) + "\n")
    _, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    got = [(r["arm"], r["step"], r["rew"]) for r in map(json.loads, out.splitlines())]
    assert ("armB", 10, 0.7) in got and ("armA", 10, 0.7) not in got
    assert not any(r[1] == 11 for r in got) and not any("a" in json.loads(x) for x in out.splitlines())
    assert "ran into this one" in err and ":22: malformed JSON" in err


def test_tail_keeps_number_like_text_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({"step": s, "loss": 0.5, "commit": "8e12345", "version": "1.10"}) + "\n"
                            for s in range(3)))
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "1"], capsys)
    last = json.loads(out.splitlines()[-1])
    assert rc == 0 and last["commit"] == "8e12345" and last["version"] == "1.10"
    rc, out, _ = run_cli(["tail", str(tmp_path), "--width", "0"], capsys)
    assert rc == 0 and "8e12345" in out and "1.10" in out and "inf" not in out


SWEEP = Path("exps/2024-06-01_resnet50_cifar10_sweep/lr_0.001/lightning_logs")




def test_tail_tells_two_lightning_versions_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # (two fits, each from step 0: a version going on from the other's steps would be its resume, one run)
    for version, scale in (("version_0", 1), ("version_1", 2)):
        write_lightning_rows(SWEEP / version, [(s, {"train_loss": scale / (s + 1), "epoch": 0}) for s in range(10)])
    rc, out, _ = run_cli(["tail", "-n", "2", "exps"], capsys)
    titles = block_titles(out)
    assert rc == 0 and len(titles) == 2, out
    assert all(t.endswith(f"/version_{v}/metrics.csv)") for t, v in zip(titles, (0, 1), strict=True)), titles


def _sections(out: str) -> list[tuple[str, str]]:
    """`tail` text output as (section title, header line) per run."""
    lines = out.splitlines()
    return [(line, lines[i + 1]) for i, line in enumerate(lines) if line.startswith("──")]


def test_tail_lays_a_lightning_run_and_an_sb3_run_out_apart(
    lightning_sb3: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run_cli(["tail", "-n", "2", "--width", "0", str(lightning_sb3)], capsys)
    assert rc == 0, err
    (light, light_head), (sb3, sb3_head) = _sections(out)
    assert "sb3_ppo" in sb3 and "sb3_ppo" not in light  # (a narrow table's title is cut)
    assert "val_loss" in light_head.split() and "val_acc" in light_head.split()
    assert not {"ep_rew", "kl", "vf_loss"} & set(light_head.split())  # no SB3 column of nans
    assert "ep_rew" in sb3_head.split() and not {"val_loss", "train_loss"} & set(sb3_head.split())
