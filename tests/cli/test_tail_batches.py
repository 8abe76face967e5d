"""`steptable tail` prints a long run a batch of rows at a time, each row built with only the keys its format prints:
the output is the same as printing every row built whole at once, in every format, with and without --columns, on
every trainer's fixture tree, a resumed run and a run numbered by position, one-shot and under -f."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

from steptable.cli import tailout
from steptable.cli.main import _parser
from steptable.cli.tail import whole_if_needed
from steptable.ingest import Follower
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
    # keys that change mid-file: some stop, a selected one (late_loss) and others first appear late, text, nulls
    changing = [{"step": s, "loss": rng.random(), "aux": rng.random() if s % 3 else None, "tag": rng.choice("ab"),
                 **({"late_loss": rng.random(), "new/metric": rng.random()} if s >= 120 else {"old_n": s})}
                for s in range(200)]
    write_rows(root / "changing" / "metrics.jsonl", [*changing, {"step": 50, "eval/acc": 0.5}, *grpo_rows(
        range(150, 230), seed=2)])  # (an evaluation merged into step 50; a restart at 150)
    # headers that rest on the keys' ranks (two long names share their cut forms): read again whole
    write_rows(root / "long" / "metrics.jsonl", [
        {"step": s, "loss": rng.random(), "grp/verylongmetricnamenumber1": rng.random(),
         "grp/verylongmetricnamenumber2": s % 2} for s in range(30)])
    return {**out, "resumed": root / "resumed", "positional": root / "positional", "aliased": root / "aliased",
            "numbers": root / "numbers", "numberless": root / "numberless", "changing": root / "changing",
            "long": root / "long"}


def whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row built whole, as a dict with all its keys, and printed in one batch: the reference."""
    monkeypatch.setattr(tailout, "ROW_BATCH", 10**9)
    monkeypatch.setattr(tailout, "jsonl_lines", lambda *a: None)  # (JSONL: never column by column)
    monkeypatch.setattr(tailout.Tail, "_printed_keys", lambda self, lay: None)
    monkeypatch.setattr(tailout.Tail, "projection", lambda self: None)  # (stores of every key)


CASES = [(name, fmt, cols) for name in ("routing", "retrain", "retrain_emergence", "verl", "tinyzero", "tinker", "trl",
                                        "maxent", "generic", "resumed", "positional", "aliased", "numbers",
                                        "numberless", "changing", "long")
         for fmt in FORMATS for cols in ("", "loss,step", "*rew*,eval*", "ex_surp,correct_of_total", "n,loss",
                                         "late*,t*", "*number1")]


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


@pytest.mark.parametrize(("name", "cols", "held"), [
    ("verl", "loss,step", True), ("resumed", "loss", True), ("changing", "late*", True), ("aliased", "ex_surp", True),
    ("tinker", "loss", True), ("long", "loss", False), ("long", "*number1", False)])
def test_stores_keep_only_what_the_columns_need_or_are_read_whole(name: str, cols: str, held: bool,
                                                                   trees: dict[str, Path]) -> None:
    """The projection the output above was printed with: it held (the stores kept few keys), or it did not and the
    runs were read again whole (headers that rest on ranks by values left out)."""
    argv = ["tail", "-n", "0", "--format", "jsonl", "--columns", cols, str(trees[name])]
    argv += ["--schema", "retrain"] if name == "aliased" else []
    args = _parser().parse_args(argv)
    tail = tailout.Tail(args, io.StringIO(), io.StringIO())
    follower = Follower(args.paths, keep=tail.projection())
    follower.scan()
    follower.finish()
    got = whole_if_needed(tail, follower, args, finish=True)
    assert (got is follower) == held
    stores = tail.chosen(got)
    assert stores and all((len(s.held_keys()) < len(s.keys)) == held for s in stores)


def _followed_rows(root: Path, spans: list[list[dict[str, object]]], argv: list[str]) -> tuple[str, Live]:
    run = root / "run" / "metrics.jsonl"
    run.parent.mkdir(parents=True)
    live = Live(root, argv)
    for rows in spans:
        write_rows(run, rows)
        live.step()
    return live.out.getvalue(), live


def _late_keys(step: int, late: str) -> dict[str, object]:
    return {"late_loss": step / 100, late: step % 7} if step >= 30 else {}


@pytest.mark.parametrize("fmt", FORMATS)
def test_under_follow_keys_that_arrive_later_print_what_whole_rows_print(tmp_path: Path, fmt: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Under -f a key first seen later is kept from its first row when the columns may need it (late_loss), left
    out when not (other/x); a restart replaces rows printed before."""
    spans = [[{**r, **_late_keys(int(r["step"]), "other/x")} for r in grpo_rows(span, seed=i)]
             for i, span in enumerate([range(0, 25), range(25, 40), range(35, 50), range(50, 51)])]
    argv = ["-n", "0", "--format", fmt, "--columns", "loss,late*"]
    got, live = _followed_rows(tmp_path / "a" / "exp", spans, argv)
    (store,) = live.follower.stores.values()
    assert {"late_loss", "loss"} <= set(store.held_keys()) and "other/x" not in store.held_keys()
    whole(monkeypatch)
    want, _ = _followed_rows(tmp_path / "b" / "exp", spans, argv)
    assert got == want
    assert "late" in got


def test_under_follow_a_key_left_out_that_turns_needed_is_kept_from_then_on(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A key arriving later makes the headers rest on ranks by values left out (two long names): the stores keep
    every key from then on (the cells read before it read as absent); what the columns select prints as before."""
    long1, long2 = "grp/verylongmetricnamenumber1", "grp/verylongmetricnamenumber2"
    spans = [[{"step": s, "loss": s / 10, long1: s / 3, "kl": s % 4} for s in range(20)],
             [{"step": s, "loss": s / 10, long1: s / 3, long2: s % 2, "kl": s % 4} for s in range(20, 40)],
             [{"step": s, "loss": s / 10, long1: s / 3, long2: s % 2, "kl": s % 4} for s in range(40, 45)]]
    argv = ["-n", "0", "--format", "jsonl", "--columns", "loss,*number1"]
    got, live = _followed_rows(tmp_path / "a" / "exp", spans, argv)
    (store,) = live.follower.stores.values()
    assert store.held_keys() == store.keys and live.follower.keep is None
    assert store.cells("kl")[:40] == [None] * 40 and store.value(41, "kl") == 1  # (read after the switch: held)
    whole(monkeypatch)
    want, _ = _followed_rows(tmp_path / "b" / "exp", spans, argv)
    assert got == want and got.count("\n") == 45


def test_under_follow_a_printed_key_that_was_not_kept_is_said_on_stderr(tmp_path: Path) -> None:
    """`--columns` given as a shortened header that only exists once a second long key arrives: the key it selects
    was left out of the rows read until then, so their cells print empty; stderr says so once, naming the key
    (rows read after it print their values)."""
    long1, long2 = "grp/verylongmetricnamenumber1", "grp/verylongmetricnamenumber2"
    spans = [[{"step": s, "loss": s / 10, long1: s / 3} for s in range(20)],
             [{"step": s, "loss": s / 10, long1: s / 3, long2: s % 2} for s in range(20, 40)],
             [{"step": s, "loss": s / 10, long1: s / 3, long2: s % 2} for s in range(40, 45)]]
    got, live = _followed_rows(tmp_path / "exp", spans, ["-n", "0", "--columns", "loss,verylongm…enumber1"])
    told = [line for line in live.tail.err.getvalue().splitlines() if "not kept" in line]
    assert len(told) == 1 and long1 in told[0] and long2 not in told[0], live.tail.err.getvalue()
    rows = [line.split() for line in got.splitlines() if line.split()[:1] and line.split()[0].isdigit()]
    assert rows[-1] == ["44", "4.4", "14.7"] and rows[25] == ["25", "2.5"]  # (read before the switch: empty)


def test_under_follow_a_switch_that_prints_no_unkept_key_says_nothing(tmp_path: Path) -> None:
    """The stores keep every key after a switch whose left-out keys are not printed (kl): nothing to say."""
    long1, long2 = "grp/verylongmetricnamenumber1", "grp/verylongmetricnamenumber2"
    spans = [[{"step": s, "loss": s / 10, long1: s / 3, "kl": s % 4} for s in range(20)],
             [{"step": s, "loss": s / 10, long1: s / 3, long2: s % 2, "kl": s % 4} for s in range(20, 40)]]
    _, live = _followed_rows(tmp_path / "exp", spans, ["-n", "0", "--format", "jsonl", "--columns", "loss,*number1"])
    assert live.follower.keep is None and "not kept" not in live.tail.err.getvalue()
