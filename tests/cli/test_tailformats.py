"""steptable.cli.tailformats: tail's JSONL, CSV and markdown output (and the table for every trainer format,
golden): every column and key carried, one CSV header, names told apart by look, alerts in the same format, cells
inert for a terminal and a spreadsheet."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steptable.cli.main import main
from steptable.ingest import Follower
from steptable.schemafiles.resolve import by_schema
from steptable.schemas import layout
from steptable.schemas.headers import look
from tests.cli.helpers import write_mixed_runs, write_wide_run
from tests.helpers import run_cli, write_rows
from tests.trainer_logs import write_tinker, write_trl_state, write_verl

NAMES = ["routing", "retrain", "retrain_emergence", "verl", "tinyzero", "tinker", "trl", "maxent", "generic"]


@pytest.mark.parametrize("name", NAMES)
def test_tail_golden_per_format(
    name: str, every_trainer_log: dict[str, Path], capsys: pytest.CaptureFixture[str],
    golden: Callable[[str, str], None],
) -> None:
    rc = main(["tail", str(every_trainer_log[name]), "-n", "0", "--width", "160"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    root = str(every_trainer_log[name].parent)
    text = out.replace(root, "<dir>") + ("--stderr--\n" + err.replace(root, "<dir>") if err else "")
    golden(f"tail_{name}.txt", text)
    lines = out.splitlines()
    assert lines and all(len(line) == len(lines[0]) for line in lines if not line.startswith("──"))


def test_csv_and_md_carry_every_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wide = write_wide_run(tmp_path)
    rc, out, err = run_cli(["tail", str(wide), "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))
    assert rc == 0 and err == "" and len(rows[0]) == 43 and all(len(r) == 43 for r in rows)
    rc, out, err = run_cli(["tail", str(wide), "--format", "md"], capsys)
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert rc == 0 and err == "" and "metric_39" in table[0].replace("\\_", "_")


def test_csv_of_runs_with_different_columns_is_one_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_mixed_runs(tmp_path, range(1, 5))
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))
    head = rows[0]
    assert rc == 0 and sum(r[:2] == ["run", "arm"] for r in rows) == 1
    assert {"foo", "bar", "critic/score/mean", "actor/pg_loss"} <= set(head)
    assert len(rows) == 9 and all(len(r) == len(head) for r in rows)
    gen = [dict(zip(head, r, strict=True)) for r in rows[1:] if r[1] == "gen"]
    assert [g["bar"] for g in gen] == ["1", "2", "3", "4"] and all(g["actor/pg_loss"] == "" for g in gen)


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


Cap = pytest.CaptureFixture[str]


def _jsonl_keys(path: Path, capsys: Cap, *extra: str) -> list[str]:
    _, out, _ = run_cli(["tail", str(path), "-n", "0", "--format", "jsonl", *extra], capsys)
    keys: dict[str, None] = {}
    for line in out.splitlines():
        keys.update(dict.fromkeys(json.loads(line)))
    return list(keys)


def _csv_head(path: Path, capsys: Cap, *extra: str) -> list[str]:
    rc, out, err = run_cli(["tail", str(path), "-n", "0", "--format", "csv", *extra], capsys)
    assert rc == 0 and err == ""
    return next(csv.reader(io.StringIO(out)))


def _md_head(path: Path, capsys: Cap) -> list[str]:
    rc, out, _ = run_cli(["tail", str(path), "-n", "0", "--format", "md"], capsys)
    assert rc == 0
    line = next(x for x in out.splitlines() if x.startswith("| "))
    return [c.strip() for c in line.strip("|").split(" | ")]


@pytest.mark.parametrize(
    ("write", "dropped"),
    [(lambda d: write_trl_state(d / "trl", steps=6, eval_every=3), ["eval_runtime", "eval_samples_per_second"]),
     (lambda d: write_verl(d / "verl" / "metrics.jsonl"), ["training/global_step"]),
     (lambda d: write_tinker(d / "tk"), ["progress/batch"]),
     (lambda d: write_rows(d / "g" / "metrics.jsonl", [{"step": s, "ts": 1.7e9 + s, "loss": 1 / (s + 1)}
                                                       for s in range(3)]), ["ts"])],
    ids=["trl", "verl", "tinker", "ts"],
)
def test_csv_and_md_carry_every_key_jsonl_carries(tmp_path: Path, capsys: Cap, write: Any, dropped: list[str]) -> None:
    write(tmp_path)
    keys = _jsonl_keys(tmp_path, capsys)
    head = _csv_head(tmp_path, capsys)
    assert set(dropped) <= set(head)
    assert sorted(head) == sorted(keys)
    md = _md_head(tmp_path, capsys)
    assert len(md) == len(head) - 2 and len(set(md)) == len(md)  # every key but run and arm, headed apart
    # the table's own columns first, in its order; the keys it hides after them
    fol = Follower([tmp_path])
    fol.scan()
    fol.finish()
    ((schema, group),) = by_schema(list(fol.stores.values()))
    shown = [c.key for c in layout(group, schema)]
    assert head[2 : 2 + len(shown)] == shown and set(dropped) <= set(head[2 + len(shown) :])


def test_columns_narrow_csv_and_jsonl_alike(tmp_path: Path, capsys: Cap) -> None:
    write_trl_state(tmp_path / "trl", steps=6, eval_every=3)
    assert _csv_head(tmp_path, capsys, "--columns", "loss") == ["run", "arm", "step", "loss"]
    assert sorted(_jsonl_keys(tmp_path, capsys, "--columns", "loss")) == ["arm", "loss", "run", "step"]
    assert _csv_head(tmp_path, capsys, "--columns", "eval_run*") == ["run", "arm", "step", "eval_runtime"]


def test_csv_counts_a_name_that_differs_only_by_a_leading_space(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # "loss, loss" in the header line reads as two loss columns
    row = {"step": 0, "loss": 1.0, " loss": 2.0, "caf\u00e9": 3, " caf\u00e9": 4}
    write_rows(tmp_path / "r" / "metrics.jsonl", [row])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    header = next(csv.reader([out.splitlines()[0]]))
    assert rc == 0 and header == ["run", "arm", "step", "loss", " loss~2", "caf\u00e9", " caf\u00e9~2"], header


def test_csv_column_names_are_told_apart_by_look_as_the_table_headers_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the CSV header compared raw strings: two "café" columns and a "loss" holding a joiner
    keys = ["loss", "lo\u200dss", "caf\u00e9", "cafe\u0301"]
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": 0, **{k: i for i, k in enumerate(keys)}}])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    header = next(csv.reader([out.splitlines()[0]]))
    assert rc == 0 and header[:3] == ["run", "arm", "step"], header
    shown = [look(h) for h in header[3:]]
    assert len(set(shown)) == len(shown) == 4, header


def _unescaped_amp(text: str) -> list[str]:
    return re.findall(r"(?<!\\)&", text)


def test_tail_and_summary_md_keep_character_references_literal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "r&#8238;un"
    write_rows(run / "metrics.jsonl", [{"step": s, "a&#8238;b": 1.0 + s, "note": "&#x202E;txet"} for s in range(3)])
    rc, out, _ = run_cli(["tail", "--format", "md", str(run)], capsys)
    assert rc == 0 and "a\\&#8238;b" in out and "\\&#x202E;txet" in out and not _unescaped_amp(out)
    rc, out, _ = run_cli(["summary", "--format", "md", str(run)], capsys)
    assert rc == 0 and "a\\&#8238;b" in out and not _unescaped_amp(out)


def test_tail_csv_quotes_formulas_but_not_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "r"
    formula = "=cmd|' /C calc'!A0"
    write_rows(run / "metrics.jsonl", [
        {"step": 0, formula: 1.0, "s": "=1+2", "at": "@SUM(A1)", "plus": "+1+2", "tab": "\t=1", "num": -0.5,
         "neg": "-0.5", "plain": "a=b"},
    ])  # fmt: skip
    rc, out, _ = run_cli(["tail", "--format", "csv", str(run)], capsys)
    head, row = csv.DictReader(io.StringIO(out)).fieldnames, next(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and head is not None
    assert "'" + formula in head and formula not in head
    assert row["'" + formula] == "1.0"
    assert (row["s"], row["at"], row["plus"], row["tab"]) == ("'=1+2", "'@SUM(A1)", "'+1+2", "' =1")
    assert (row["num"], row["neg"], row["plain"]) == ("-0.5", "-0.5", "a=b")


def test_tail_csv_alerts_quote_a_formula_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "=r"
    write_rows(run / "metrics.jsonl", [{"step": s, "loss": float("nan") if s == 3 else 1.0 + s} for s in range(4)])
    rc, out, _ = run_cli(["tail", "--alerts-only", "--format", "csv", str(run)], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 1 and rows and all(r["arm"] == "'=r" for r in rows)


def test_csv_has_one_header_for_several_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for arm in ("a", "b", "c"):
        write_rows(tmp_path / arm / "metrics.jsonl", [{"step": s, "loss": 0.5} for s in range(3)])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv", "-n", "0"], capsys)
    lines = out.splitlines()
    assert rc == 0 and sum(line.startswith("run,arm,") for line in lines) == 1 and len(lines) == 10
    assert len({line.count(",") for line in lines}) == 1


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


def test_tail_csv_and_jsonl_keep_control_sequences_inert(tmp_path: Path) -> None:
    # csv wrote keys, run and arm raw (an OSC retitle in "arm" reached the terminal); jsonl escapes C0 but wrote
    # C1 controls (U+009B is CSI) and bidi overrides raw.
    import argparse
    import io

    from steptable.cli.tail import run as run_tail

    path = tmp_path / "r" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"step": 0, "arm": "a\x1b]0;T\x07b\x9b2J", "k\x1b[31m": 1, "s": "\u202eabc\x9b31m"})
                    + "\n", encoding="utf-8")
    for fmt in ("csv", "jsonl"):
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(paths=[str(tmp_path)], follow=False, last=20, columns="", format=fmt, schema=None,
                                  width=0, header_every=20, alerts_only=False, poll=None)
        assert run_tail(args, out, err) == 0
        text = out.getvalue()
        assert not any(ch in text for ch in "\x1b\x07\x9b\u202e"), (fmt, text)
        if fmt == "jsonl":
            row = json.loads(text)
            assert row["arm"] == "a\x1b]0;T\x07b\x9b2J" and row["s"] == "\u202eabc\x9b31m"  # escaped, not lost


def _two_runs(tmp_path: Path) -> tuple[Path, Path]:
    it = tmp_path / "iter" / "metrics.jsonl"
    write_rows(it, ({"iteration": 10 * (s + 1), "loss": 0.5 - 0.1 * s, "reward": 0.1 * s} for s in range(3)))
    st = tmp_path / "step" / "metrics.jsonl"
    write_rows(st, ({"step": s + 1, "loss": 0.9 - 0.1 * s} for s in range(2)))
    return it, st


def test_jsonl_columns_keep_step_of_an_iteration_keyed_run(tmp_path: Path, capsys: Cap) -> None:
    """``--columns loss`` printed {"iteration": 10, "loss": 0.5} for a run keyed by iteration: no "step"."""
    it, _ = _two_runs(tmp_path)
    for paths, want in (([it], [10, 20, 30]), ([tmp_path], [10, 20, 30, 1, 2])):  # alone, and beside a step-keyed run
        rc, out, _ = run_cli(["tail", *map(str, paths), "--format", "jsonl", "--columns", "loss"], capsys)
        assert rc == 0
        recs = [json.loads(line) for line in out.splitlines()]
        assert [r["step"] for r in recs] == want
        assert all("loss" in r and "reward" not in r for r in recs)


def test_csv_step_column_is_named_step(tmp_path: Path, capsys: Cap) -> None:
    """The step column is named "step", also for a run keyed by iteration alone (not "iteration" alone and "step"
    beside a step-keyed run)."""
    it, _ = _two_runs(tmp_path)
    for paths, want in (([it], ["10", "20", "30"]), ([tmp_path], ["10", "20", "30", "1", "2"])):
        rc, out, _ = run_cli(["tail", *map(str, paths), "--format", "csv"], capsys)
        assert rc == 0
        rows = list(csv.DictReader(io.StringIO(out)))
        assert "iteration" not in rows[0] and [r["step"] for r in rows] == want
        assert [r["loss"] for r in rows][:3] == ["0.5", "0.4", "0.3"]


def test_md_shows_a_unix_time_as_a_time(tmp_path: Path, capsys: Cap) -> None:
    """md shows ``ts`` as a time (not 1.8e9 on every row); csv and jsonl keep the number."""
    run = tmp_path / "r" / "metrics.jsonl"
    write_rows(run, ({"step": s, "ts": 1.8e9 + 30 * s, "time": 1.8e12 + 500 * s, "loss": 1.0} for s in range(3)))
    rc, out, _ = run_cli(["tail", str(run), "--format", "md"], capsys)
    assert rc == 0 and "e9" not in out and "e12" not in out
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in out.splitlines() if line.startswith("| ")]
    ts, time = rows[0].index("ts"), rows[0].index("time")
    assert [r[ts] for r in rows[1:]] == ["2027-01-15T08:00:00Z", "2027-01-15T08:00:30Z", "2027-01-15T08:01:00Z"]
    assert rows[2][time] == "2027-01-15T08:00:00Z"  # milliseconds (1.8e12 + 500 ms, to the second)
    rc, out, _ = run_cli(["tail", str(run), "--format", "csv"], capsys)
    assert [r["ts"] for r in csv.DictReader(io.StringIO(out))] == ["1800000000.0", "1800000030.0", "1800000060.0"]
    rc, out, _ = run_cli(["tail", str(run), "--format", "jsonl"], capsys)
    assert [json.loads(line)["ts"] for line in out.splitlines()] == [1.8e9, 1.8e9 + 30, 1.8e9 + 60]


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
