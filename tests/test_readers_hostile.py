"""`tail` / `summary` / `legend` on files that a quick look at real runs does not show: a line nested 10,000 deep,
a 23-digit step in a console log, a checkpoint's trainer_state.json caught mid-write, keys that are empty or span
lines, a 77 KB first line, hundreds of arms, emoji."""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import pytest

from steptable.cli.main import main
from steptable.summary.report import _arm_tag
from steptable.table.formatting import display_width
from tests.helpers import following, printed_steps, run_cli, write_rows


def test_a_deeply_nested_line_is_one_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "arm" / "metrics.jsonl"
    deep_list = '{"step": 2, "x": ' + "[" * 10_000 + "]" * 10_000 + "}"
    deep_obj = '{"step": 4, "o": ' + '{"a": ' * 2_000 + "1" + "}" * 2_000 + "}"
    lines = ['{"step": 0, "loss": 1}', '{"step": 1, "loss": 0.9}', deep_list, '{"step": 3, "loss": 0.2}', deep_obj,
             '{"step": 5, "loss": 0.1}']  # fmt: skip
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and printed_steps(out) == [0, 1, 3, 5]
    assert "metrics.jsonl:3: JSON nested too deeply" in err and "metrics.jsonl:5:" in err
    assert "internal error" not in err


def test_console_log_step_past_int64_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "train.log").write_text(
        "(main_task pid=1) step:1 - critic/kl:0.04 - actor/pg_loss:0.1\n"
        "(main_task pid=1) step:99999999999999999999999 - critic/kl:0.04\n"
        f"(main_task pid=1) step:{'9' * 5000} - critic/kl:0.04\n"
        "(main_task pid=1) step:2 - critic/kl:0.05 - actor/pg_loss:0.2\n"
    )
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and printed_steps(out) == [1, 2] and "internal error" not in err


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


def test_summary_reads_absent_cells_as_absent_not_as_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, object]] = []
    for s in range(60):
        if s % 5 == 4:  # an evaluation row: other keys, no loss
            rows.append({"step": s, "accuracy": 0.5})
        else:
            rows.append({"step": s, "loss": 1.0 + 0.01 * (s % 3), "grad_norm": 1.0 + 0.01 * (s % 2)})
    write_rows(tmp_path / "sparse" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path / "sparse")], capsys)
    assert rc == 0 and "alerts 0" in out and "non-finite" not in out
    rows[40]["loss"] = math.nan  # a loss that really was non-finite (written as NaN) still alerts
    write_rows(tmp_path / "bad" / "metrics.jsonl", rows)
    rc, out, _ = run_cli(["summary", str(tmp_path / "bad")], capsys)
    assert "E step 40 loss non-finite" in out


def _trainer_state(path: Path, steps: range, cut_at: int | None = None) -> None:
    hist = [{"step": s, "loss": 1.0 / s, "grad_norm": 0.5, "learning_rate": 1e-6, "epoch": s / 100} for s in steps]
    text = json.dumps({"log_history": hist, "global_step": steps[-1]}, indent=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text[:cut_at] if cut_at else text)


def test_half_written_trainer_state_is_reported_and_the_older_one_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    _trainer_state(run / "checkpoint-10" / "trainer_state.json", range(1, 11))
    _trainer_state(run / "checkpoint-20" / "trainer_state.json", range(1, 21), cut_at=700)
    os.utime(run / "checkpoint-10" / "trainer_state.json", (1e9, 1e9))  # the half-written one is the newest
    rc, out, err = run_cli(["tail", str(run), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and printed_steps(out) == list(range(1, 11))
    assert "checkpoint-20/trainer_state.json: invalid JSON" in err and "showing the older" in err
    only = tmp_path / "only"
    _trainer_state(only / "checkpoint-5" / "trainer_state.json", range(1, 21), cut_at=700)
    rc, out, err = run_cli(["tail", str(only)], capsys)
    assert rc == 2 and out == "" and "invalid JSON" in err and "no readable rows" in err
    (tmp_path / "nohist").mkdir()
    (tmp_path / "nohist" / "trainer_state.json").write_text('{"log_history": 5}')
    rc, out, err = run_cli(["summary", str(tmp_path / "nohist")], capsys)
    assert "no log_history list" in err


def test_empty_and_multiline_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[dict[str, object]] = [{"step": s, "loss": 1.0 / (s + 1), "": 5, "a\nb": 3} for s in range(3)]
    write_rows(tmp_path / "k" / "metrics.jsonl", rows)
    for argv in (["tail"], ["tail", "--format", "csv"], ["summary"], ["legend"]):
        rc, out, err = run_cli([*argv, str(tmp_path / "k")], capsys)
        assert rc == 0 and "Traceback" not in err and "internal error" not in err, (argv, err)
        assert "a\nb" not in out  # the key's newline never splits a line of output


def test_alerts_only_on_a_missing_path_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(["tail", "--alerts-only", str(tmp_path / "typo")], capsys)
    assert rc == 2 and "no such path" in err


def test_csv_has_one_header_for_several_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for arm in ("a", "b", "c"):
        write_rows(tmp_path / arm / "metrics.jsonl", [{"step": s, "loss": 0.5} for s in range(3)])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv", "-n", "0"], capsys)
    lines = out.splitlines()
    assert rc == 0 and sum(line.startswith("run,arm,") for line in lines) == 1 and len(lines) == 10
    assert len({line.count(",") for line in lines}) == 1


def test_arm_tags_never_run_out() -> None:
    tags = [_arm_tag(i) for i in range(20_000)]
    assert len(set(tags)) == 20_000
    assert tags[:3] == ["a", "b", "c"] and tags[26] == "aa" and tags[701] == "zz" and tags[702] == "aaa"


def test_summary_aligns_wide_key_names_by_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for arm in ("a", "b"):
        write_rows(tmp_path / arm / "metrics.jsonl",
                   [{"step": s, "奖励": 0.5 + 0.01 * s, "loss": 1.0} for s in range(5)])  # fmt: skip
    rc, out, _ = run_cli(["summary", str(tmp_path), "--align"], capsys)
    table = [line for line in out.splitlines() if line.startswith(("col", "奖励", "loss", "   "))]
    assert rc == 0 and len(table) >= 3
    # (up to the trend, which is left-aligned on purpose)
    assert len({display_width(line.rstrip().rsplit(" ", 1)[0]) for line in table if not line.startswith("col")}) == 1


def test_summary_age_of_a_run_without_a_clock_is_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5} for s in range(3)])
    os.utime(path, (time.time() - 3 * 86400, time.time() - 3 * 86400))
    rc, out, _ = run_cli(["summary", str(tmp_path / "old")], capsys)
    assert rc == 0 and "upd 3d ago" in out.splitlines()[0]


def test_a_jsonl_whose_first_line_is_long_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = {"step": 0, **{f"val-core/src{i}/reward/mean@4": 0.5 for i in range(2000)}}  # ~77 KB
    write_rows(tmp_path / "exp1.jsonl", [first, *({"step": s, "actor/pg_loss": 0.1 * s} for s in range(1, 4))])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and printed_steps(out) == [0, 1, 2, 3]


@pytest.mark.parametrize("argv", [["-n", "-5"], ["--header-every", "-1"], ["--poll", "0"], ["--width", "-3"]])
def test_negative_counts_are_refused(tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["tail", *argv, str(tmp_path)])
    assert exc.value.code == 2 and "must be" in capsys.readouterr().err


def test_markdown_output_keeps_log_text_literal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    payload = "![x](http://evil.example/p.png) <img src=x onerror=alert(1)> *bold* a|b"
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": 0, "note": payload, "loss": 0.5}])
    for argv in (["tail", "--format", "md"], ["summary", "--format", "md"]):
        rc, out, _ = run_cli([*argv, str(tmp_path / "r")], capsys)
        assert rc == 0
        assert not re.search(r"(?<!\\)(!|\[|<img|\*bold)", out), (argv, out)  # each opener escaped
    # the run's name too: a directory (or an "arm" value) is text from the file system
    for arms in (["[pwn](https:evil.example)<b>"], ["[pwn](https:evil.example)<b>", "plain"]):
        for arm in arms:
            write_rows(tmp_path / "m" / str(len(arms)) / arm / "metrics.jsonl", [{"step": 0, "loss": float("nan")}])
        rc, out, _ = run_cli(["summary", "--format", "md", str(tmp_path / "m" / str(len(arms)))], capsys)
        assert rc in (0, 1) and "pwn" in out and not re.search(r"(?<!\\)(\[|<b>)", out), out


def test_a_row_too_deep_for_python_is_one_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the decoder takes a nesting that flattening it would exceed Python's recursion limit with (msgspec on
    Python 3.12 decodes 2,000 levels), the row is reported, not the file lost."""
    from steptable.ingest.readers import jsonl

    real = jsonl.flatten

    def flatten(obj: dict[str, object]) -> dict[str, object]:
        if "deep" in obj:
            raise RecursionError("maximum recursion depth exceeded")
        return real(obj)

    monkeypatch.setattr(jsonl, "flatten", flatten)
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 0, "loss": 1}, {"step": 1, "deep": {"a": 1}}, {"step": 2}])
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and printed_steps(out) == [0, 2] and "metrics.jsonl:2: JSON nested too deeply" in err


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_config_json_that_is_not_a_file_is_passed_over(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    config = tmp_path / "r" / "config.json"
    if kind == "fifo":
        os.mkfifo(config)  # reading it blocked every command
    elif kind == "device":
        config.symlink_to("/dev/zero")  # reading it filled memory
    else:
        config.mkdir()
    rc, out, _ = run_cli(["tail", str(tmp_path / "r"), "--format", "jsonl"], capsys)
    assert rc == 0 and printed_steps(out) == [0]


def test_a_named_file_of_json_rows_is_read_whatever_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl's file logger writes wherever $VERL_FILE_LOGGER_PATH says: exp.json, exp, run.out..."""
    for name in ("exp.json", "exp", "metrics.ndjson"):
        path = tmp_path / name
        path.write_text("\ufeff" + "".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(3)))
        rc, out, _ = run_cli(["tail", str(path), "--format", "jsonl"], capsys)
        assert rc == 0 and printed_steps(out) == [0, 1, 2], name
    (tmp_path / "notes").write_text("plain words\n")
    rc, _, err = run_cli(["tail", str(tmp_path / "notes")], capsys)
    assert rc == 2 and "not a metrics file" in err
    os.mkfifo(tmp_path / "fifo")
    rc, _, err = run_cli(["tail", str(tmp_path / "fifo")], capsys)  # named, but never opened: it would block
    assert rc == 2


def test_a_trainer_state_with_a_bom_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = {"log_history": [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.4}]}
    path = tmp_path / "run" / "trainer_state.json"
    path.parent.mkdir()
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(state).encode())
    rc, out, _ = run_cli(["tail", str(path.parent), "--format", "jsonl"], capsys)
    assert rc == 0 and printed_steps(out) == [1, 2]


def test_integers_past_two_to_the_53_stay_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seeds and counters past 2**53 came out as other integers (a double rounds them)."""
    seed, big = 16764245381219219765, 2**53 + 1
    rows = [{"step": s, "seed": seed, "tokens": big + 2 * s, "loss": 0.5} for s in range(600)]  # the fast path
    rows[300]["late"] = big  # a column created by a later row
    write_rows(tmp_path / "a" / "metrics.jsonl", rows)
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 599, "merged": -big}])  # merged into a stored row
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    got = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["tokens"] for r in got] == [big + 2 * s for s in range(600)]
    assert {r["seed"] for r in got} == {seed} and got[300]["late"] == big and got[599]["merged"] == -big
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv", "-n", "1"], capsys)
    assert str(seed) in out and str(big + 1198) in out


def test_lightning_csv_logger_metrics_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lightning's CSVLogger: the union of keys, empty cells, a train row and a val row at one step, a key with a
    space, and the file rewritten from the top when a key is added."""
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("epoch,step,train_loss,val_loss,val acc\n0,49,0.9,,\n0,49,,0.85,0.6\n0,99,nan,,\n")
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["step"] for r in rows] == [49, 99]
    assert rows[0]["train_loss"] == 0.9 and rows[0]["val_loss"] == 0.85 and rows[0]["val acc"] == 0.6
    assert rows[1]["train_loss"] is None and "val_loss" not in rows[1]  # nan written as null; empty = absent


def test_sb3_progress_csv_is_read_by_its_timesteps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ppo" / "progress.csv"
    path.parent.mkdir()
    path.write_text("time/total_timesteps,rollout/ep_rew_mean,train/loss\n2048,-120.5,\n4096,-80.25,0.5\n")
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["time/total_timesteps"] for r in rows] == [2048, 4096], err
    assert rows[1]["rollout/ep_rew_mean"] == -80.25 and rows[1]["train/loss"] == 0.5
    path.write_text("time/total_timesteps,rollout/ep_rew_mean\n2048,-120.5\n4096,-80.25,9,9\n")
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    assert rc == 0 and "progress.csv:3: 4 cells under a header of 2" in err


def test_a_log_file_of_json_rows_is_jsonl_and_a_console_log_opening_with_a_dict_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verl = tmp_path / "verl" / "metrics.log"  # $VERL_FILE_LOGGER_PATH=.../metrics.log
    verl.parent.mkdir()
    verl.write_text("".join(json.dumps({"step": s, "data": {"actor/pg_loss": 0.1 * s}}) + "\n" for s in range(3)))
    console = tmp_path / "tz" / "train.log"
    console.parent.mkdir()
    console.write_text("{'actor': {'lr': 1e-6}}\n(main_task pid=1) step:1 - critic/kl:0.04 - actor/pg_loss:0.1\n")
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    runs = {json.loads(line)["run"] for line in out.splitlines()}
    assert rc == 0 and runs == {"verl/metrics.log", "tz/train.log"}


def test_csv_rows_survive_bad_cells_bad_steps_a_bom_and_repeated_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    big = "x" * 140_000  # past the csv module's field limit: one bad line, not the whole file
    path.write_text(
        '\ufeff"step","loss","loss","note"\n0,0.5,9,a\n1,0.4,9,' + big + '\n1.5,0.3,9,b\n2,1_000,9,c\n'
    )
    rc, out, err = run_cli(["tail", str(path), "--format", "jsonl", "-n", "0"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    # the BOM kept no quotes on "step"; the row with the huge cell is one bad line; the 1.5 row is kept under the
    # step before it and said so, overwriting nothing there; the first "loss" column is the one shown; "1_000" is text
    assert rc == 0 and [r["step"] for r in rows] == [0, 2]
    assert [r["loss"] for r in rows] == [0.5, "1_000"]
    assert "header name 'loss' repeated" in err and ":3: malformed CSV" in err
    assert ":4: step 'step' not an integer (1.5): row kept under step 0" in err


def test_a_live_log_cut_mid_line_shows_no_wrong_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A one-shot read of files caught mid-write: a console line cut in ``lr:1e-06`` would read as lr 1, a CSV
    row cut in 6144 as step 61, and a cut JSON line is being written, not bad."""
    (tmp_path / "tz").mkdir()
    (tmp_path / "tz" / "train.log").write_text(
        "(main_task pid=1) step:1 - critic/score/mean:0.5 - actor/lr:1e-06\n"
        "(main_task pid=1) step:2 - critic/score/mean:0.6 - actor/lr:1"
    )
    (tmp_path / "sb3").mkdir()
    (tmp_path / "sb3" / "progress.csv").write_text(
        "rollout/ep_rew_mean,time/total_timesteps\n1.0,2048\n1.5,4096\n2.0,61"
    )
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "metrics.jsonl").write_text('{"step":0,"loss":1}\n{"step":1,"loss":0.5}\n{"step":2,"lo')
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and err == ""
    lrs = [r["actor/lr"] for r in rows if "actor/lr" in r]
    assert lrs == [1e-06]
    assert sorted(r["time/total_timesteps"] for r in rows if "time/total_timesteps" in r) == [2048, 4096]
    assert [r["step"] for r in rows if "loss" in r] == [0, 1]
    # a JSONL writer that never ends its file with a newline still has its last row read
    (tmp_path / "j" / "metrics.jsonl").write_text('{"step":0,"loss":1}\n{"step":1,"loss":0.5}')
    rc, out, err = run_cli(["tail", str(tmp_path / "j"), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and [json.loads(line)["step"] for line in out.splitlines()] == [0, 1]


def test_runs_that_name_their_steps_differently_share_one_step_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wandb history (``_step``) beside a StepLogger run (``step``), or an SB3 CSV beside them: each run's own
    steps in the one step column, not nan, and no stray ``_step`` column."""
    wb = tmp_path / "exp" / "wandb" / "run-1" / "files" / "wandb-history.jsonl"
    write_rows(wb, [{"_step": s, "_runtime": 10.0 * s, "train/loss": 1 / (s + 1)} for s in range(3)])
    write_rows(tmp_path / "exp" / "logs" / "metrics.jsonl", [{"step": 10 * s, "train/loss": 0.5} for s in range(3)])
    (tmp_path / "sb3").mkdir()
    (tmp_path / "sb3" / "progress.csv").write_text("rollout/ep_rew_mean,time/total_timesteps\n1.0,2048\n1.5,4096\n")
    rc, out, err = run_cli(["tail", str(tmp_path), "--format", "csv", "-n", "0"], capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "_step" not in lines[0].split(",")
    steps: dict[str, list[str]] = {}
    for line in lines[1:]:
        if line.startswith("run,"):
            continue
        run, _arm, step = line.split(",")[:3]
        steps.setdefault(run.split("/")[-1], []).append(step)
    assert steps == {"metrics.jsonl": ["0", "10", "20"], "wandb-history.jsonl": ["0", "1", "2"],
                     "progress.csv": ["2048", "4096"]}
