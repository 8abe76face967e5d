"""`steptable tail` prints a long run a batch of rows at a time, each row built with only the keys its format prints:
the output is the same as printing every row built whole at once, in every format, with and without --columns, on
every trainer's fixture tree, a resumed run and a run numbered by position, one-shot and under -f."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from steptable.cli import tailout
from tests.cli.helpers import Live
from tests.helpers import grpo_rows, run_cli, write_rows
from tests.trainer_logs import write_all

FORMATS = ("text", "jsonl", "csv", "md")


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("batches")
    out = write_all(root / "trainers")
    rng = random.Random(3)
    resumed = grpo_rows(range(300)) + grpo_rows(range(200, 260), seed=1)  # a restart from step 200's checkpoint
    for r in resumed[::17]:
        r["eval/acc"] = rng.random()  # a sparse column
    write_rows(root / "resumed" / "metrics.jsonl", resumed)
    write_rows(root / "positional" / "metrics.jsonl", [{"loss": rng.random(), "tag": "a"} for _ in range(50)])
    # read with --schema retrain: a column filled from its alias, one derived from two others
    write_rows(root / "aliased" / "metrics.jsonl", [
        {"step": s, "loss": rng.random(), "exec_entropy_mean": rng.random(), "correct_count": rng.randrange(8),
         "total_count": 8} for s in range(40)])
    # numbers only (JSONL then writes a batch column by column): non-finite values, a null, ints, gaps, a huge value
    lines = [f'{{"step": {s}, "loss": {["NaN", "Infinity", "-Infinity", "null", "1e308", "0.5"][s % 6]}, '
             f'"n": {s * 3}' + (', "eval": 0.25}' if s % 4 == 0 else "}") for s in range(60)]
    (root / "numbers").mkdir()
    (root / "numbers" / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (root / "numberless").mkdir()  # numbered by position, a row's own "run" and "arm"
    (root / "numberless" / "metrics.jsonl").write_text("".join(
        json.dumps({"loss": i / 7, "run": "theirs", "arm": "numberless" if i % 2 else "x"}) + "\n" for i in range(30)))
    return {**out, "resumed": root / "resumed", "positional": root / "positional", "aliased": root / "aliased",
            "numbers": root / "numbers", "numberless": root / "numberless"}


def whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row built whole, as a dict with all its keys, and printed in one batch: the reference."""
    monkeypatch.setattr(tailout, "ROW_BATCH", 10**9)
    monkeypatch.setattr(tailout, "jsonl_lines", lambda *a: None)  # (JSONL: never column by column)
    monkeypatch.setattr(tailout.Tail, "_printed_keys", lambda self, lay: None)


CASES = [(name, fmt, cols) for name in ("routing", "retrain", "retrain_emergence", "verl", "tinyzero", "tinker", "trl",
                                        "maxent", "generic", "resumed", "positional", "aliased", "numbers",
                                        "numberless")
         for fmt in FORMATS for cols in ("", "loss,step", "*rew*,eval*", "ex_surp,correct_of_total", "n,loss")]


@pytest.mark.parametrize(("name", "fmt", "cols"), CASES)
def test_batches_of_printed_keys_print_what_whole_rows_print(name: str, fmt: str, cols: str,
                                                             trees: dict[str, Path],
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["tail", "-n", "0", "--format", fmt, "--width", "0", str(trees[name])]
    argv += ["--columns", cols] if cols else []
    argv += ["--schema", "retrain"] if name == "aliased" else []
    with monkeypatch.context() as m:
        m.setattr(tailout, "ROW_BATCH", 7)  # batch edges inside every block, header and table
        got = run_cli(argv, capsys)
    whole(monkeypatch)
    want = run_cli(argv, capsys)
    assert got == want
    assert want[1].strip() or want[0] == 2  # (something to compare: rows, or a filter that matched nothing)


def _followed(root: Path, steps: list[range], argv: list[str]) -> str:
    """What ``tail -f ARGV`` prints while the spans of steps are appended one by one (a span that starts before the
    last step is a restart from a checkpoint)."""
    run = root / "run" / "metrics.jsonl"
    run.parent.mkdir(parents=True)  # (the same names under both roots: titles name the run by them)
    live = Live(root, argv)
    for i, span in enumerate(steps):
        with open(run, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in grpo_rows(span, seed=i))
        live.step()
    return live.out.getvalue()


@pytest.mark.parametrize("fmt", FORMATS)
def test_under_follow_batches_print_what_whole_rows_print(tmp_path: Path, fmt: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [range(0, 40), range(40, 45), range(30, 60), range(60, 61)]
    argv = ["-n", "0", "--format", fmt, "--columns", "loss,rew*"]
    monkeypatch.setattr(tailout, "ROW_BATCH", 3)
    got = _followed(tmp_path / "a" / "exp", steps, argv)
    whole(monkeypatch)
    want = _followed(tmp_path / "b" / "exp", steps, argv)
    assert got == want
    assert got.count("\n") > 60
