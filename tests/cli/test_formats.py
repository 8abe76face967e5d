"""Reading files end to end: what a quick look at real runs does not show (a line nested 10,000 deep, a 23-digit step
in a console log, a trainer_state.json caught mid-write, empty or multi-line keys, a long first line, integers past
2**53, CSV quirks, logs cut mid-line, runs that name their steps differently)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import load
from tests.helpers import printed_steps, run_cli, write_rows
from tests.library_logs import write_lightning_rows, write_sb3_rows, write_trainer_state, write_verl_rows
from tests.trainer_logs import write_sb3_monitor


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


def _trainer_state(path: Path, steps: range, cut_at: int | None = None) -> None:
    """Written by transformers' ``TrainerState.save_to_json``; ``cut_at``: then cut there, as found mid-write."""
    hist = [{"step": s, "loss": 1.0 / s, "grad_norm": 0.5, "learning_rate": 1e-6, "epoch": s / 100} for s in steps]
    write_trainer_state(path, hist, steps[-1], epoch=steps[-1] / 100)
    if cut_at:
        path.write_text(path.read_text()[:cut_at])


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


def test_a_jsonl_whose_first_line_is_long_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = {"step": 0, **{f"val-core/src{i}/reward/mean@4": 0.5 for i in range(2000)}}  # ~77 KB
    write_rows(tmp_path / "exp1.jsonl", [first, *({"step": s, "actor/pg_loss": 0.1 * s} for s in range(1, 4))])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and printed_steps(out) == [0, 1, 2, 3]


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
    path = write_trainer_state(tmp_path / "run" / "trainer_state.json", [{"step": 1, "loss": 0.5},
                                                                          {"step": 2, "loss": 0.4}], 2)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # (HF writes none: a file that went through an editor)
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
    path = write_lightning_rows(tmp_path / "lightning_logs" / "version_0", [
        (49, {"train_loss": 0.9, "epoch": 0}), (49, {"val_loss": 0.85, "val acc": 0.6, "epoch": 0}),
        (99, {"train_loss": math.nan, "epoch": 0})])
    assert path.read_text().splitlines()[0] == "epoch,step,train_loss,val acc,val_loss"  # (the logger sorts keys)
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["step"] for r in rows] == [49, 99]
    assert rows[0]["train_loss"] == 0.9 and rows[0]["val_loss"] == 0.85 and rows[0]["val acc"] == 0.6
    assert rows[1]["train_loss"] is None and "val_loss" not in rows[1]  # nan written as null; empty = absent


def test_sb3_progress_csv_is_read_by_its_timesteps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_sb3_rows(tmp_path / "ppo", [{"time/total_timesteps": 2048, "rollout/ep_rew_mean": -120.5},
                                             {"time/total_timesteps": 4096, "rollout/ep_rew_mean": -80.25,
                                              "train/loss": 0.5}])
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
    # $VERL_FILE_LOGGER_PATH=.../metrics.log
    write_verl_rows(tmp_path / "verl" / "metrics.log", [(s, {"actor/pg_loss": 0.1 * s}) for s in range(3)])
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
    sb3 = write_sb3_rows(tmp_path / "sb3", [{"rollout/ep_rew_mean": 1.0 + i / 2, "time/total_timesteps": 2048 * (i + 1)}
                                            for i in range(3)])
    sb3.write_bytes(sb3.read_bytes()[:-3])  # its last row cut to "2.0,61" or "6144,2" (SB3 orders the columns)
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
    write_sb3_rows(tmp_path / "sb3", [{"rollout/ep_rew_mean": 1.0, "time/total_timesteps": 2048},
                                      {"rollout/ep_rew_mean": 1.5, "time/total_timesteps": 4096}])
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


def test_sb3_monitor_csv_named_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mon" / "0.monitor.csv"
    write_sb3_monitor(path, 10)
    rc, out, err = run_cli(["tail", str(path), "--format", "jsonl", "-n", "0"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and err == "", err
    assert [r["step"] for r in rows] == list(range(10))
    assert [r["r"] for r in rows] == [10.0 + i for i in range(10)] and rows[3]["l"] == 13 and rows[4]["t"] == 2.0


def _csv_rows(out: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k not in ("run", "arm")} for line in out.splitlines()]


def test_a_quoted_newline_in_a_csv_cell_keeps_the_rows_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """csv.writer quotes a text with a newline: the line after it is the rest of the cell, not a row of its own
    merged into the step before it. A line separator the csv module keeps in a cell (U+2028) too."""
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerows([["step", "train_loss", "note", "acc"], [1, 0.9, "a", 0.1], [2, 0.8, "multi\nline\n", 0.2],
                     [3, 0.7, 'say ""hi""\r\nbye', 0.3], [4, 0.6, "x\u2028y", 0.4], [5, 0.5, "b", 0.5]])
    rc, out, err = run_cli(["tail", str(path), "--format", "jsonl", "-n", "0"], capsys)
    assert rc == 0 and not err
    assert _csv_rows(out) == [
        {"step": 1, "train_loss": 0.9, "note": "a", "acc": 0.1},
        {"step": 2, "train_loss": 0.8, "note": "multi\nline\n", "acc": 0.2},
        {"step": 3, "train_loss": 0.7, "note": 'say ""hi""\nbye', "acc": 0.3},
        {"step": 4, "train_loss": 0.6, "note": "x\u2028y", "acc": 0.4},
        {"step": 5, "train_loss": 0.5, "note": "b", "acc": 0.5},
    ]


def test_a_quote_left_open_at_the_end_of_a_file_costs_its_line_in_a_one_shot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the rows after a stray quote are not held for its closing quote: a one-shot read shows them and says the quote
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text('step,loss,note\n0,1.0,ok\n1,0.9,"open quote\n2,0.8,x\n3,0.7,y\n', encoding="utf-8")
    rc, out, err = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["0", "2", "3"], out
    assert "metrics.csv:3: quote not closed by the end of the file" in err, err
    (store,) = load([tmp_path]).values()
    assert list(store.steps) == [0, 2, 3] and store.bad_count == 1


def test_a_csv_read_once_in_the_middle_of_a_multiline_cell_makes_no_rows_of_its_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the end-of-read flush does not read the held lines of a record still being written as rows ("42" as step 42)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["step", "loss", "sample"])
    for s in range(1, 5):
        w.writerow([s, 1 / s, f"answer {s}:\n42\nthe end"])
    text = buf.getvalue()
    cut = text[: text.index("answer 4:\n42\n") + len("answer 4:\n42\n")]
    path = tmp_path / "r" / "metrics.csv"
    path.parent.mkdir()
    path.write_text(cut, encoding="utf-8")
    rc, out, err = run_cli(["tail", str(tmp_path)], capsys)
    assert rc == 0 and [line.split()[0] for line in out.splitlines()[1:]] == ["1", "2", "3"], out
    assert "quote" not in err, err  # a record being written is not a bad line
