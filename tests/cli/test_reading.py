"""The commands' argparse types, and their one read of the runs under the paths given."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from steptable.cli.reading import non_negative, positive, positive_seconds, read_runs
from tests.helpers import write_rows


@pytest.mark.parametrize(("fn", "ok", "bad"), [
    (non_negative, ["0", "7"], ["-1", "x", "1.5"]),
    (positive, ["1", "12"], ["0", "-3", "y"]),
    (positive_seconds, ["0.5", "3"], ["0", "-1", "nan", "inf", "z"]),
])
def test_argument_types_take_what_they_say(fn: object, ok: list[str], bad: list[str]) -> None:
    f = fn  # type: ignore[assignment]
    assert [f(x) for x in ok] == [type(f(ok[0]))(x) for x in ok]  # type: ignore[operator]
    for x in bad:
        with pytest.raises(argparse.ArgumentTypeError):
            f(x)  # type: ignore[operator]


def test_read_runs_gives_stores_in_name_order_and_says_the_followers_problems(tmp_path: Path) -> None:
    write_rows(tmp_path / "b" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    (tmp_path / "a" / "metrics.jsonl").write_text('{"step": 0, "loss": 1.0}\nnot json\n{"step": 1, "loss": 0.5}\n')
    err = io.StringIO()
    follower, stores = read_runs([str(tmp_path)], err)
    assert [s.run for s in stores] == ["a/metrics.jsonl", "b/metrics.jsonl"] and len(stores[0]) == 2
    assert "malformed JSON" in err.getvalue() and follower.stores.keys() == {s.run for s in stores}


def test_bad_lines_of_many_files_are_counted_and_a_run_asked_for_hears_only_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep of 40 runs, 39 with a torn line: every command told 39 lines, every poll of an agent following one
    clean run too. The first BAD_FILES_TOLD files are told line by line and the rest counted on one line; tail
    --run tells the lines of that run only (its own still told)."""
    from steptable.cli.reading import BAD_FILES_TOLD
    from tests.helpers import run_cli

    for i in range(40):
        f = tmp_path / f"sweep{i:02d}" / "metrics.jsonl"
        write_rows(f, [{"step": s, "loss": 0.5} for s in range(30)])
        if i:
            with f.open("a") as fh:
                fh.write('{"step": 30, "lo\n')
    _, _, err = run_cli(["legend", str(tmp_path)], capsys)
    told = [ln for ln in err.splitlines() if "malformed JSON" in ln]
    assert len(told) == BAD_FILES_TOLD
    assert f"bad lines in {39 - BAD_FILES_TOLD} more file(s) too" in err
    assert f"({39 - BAD_FILES_TOLD} lines not told; summary counts each run's: bad N)" in err
    rc, _, err = run_cli(["tail", str(tmp_path), "--run", "sweep00", "--since", "25"], capsys)
    assert rc == 0 and "malformed" not in err and "bad lines" not in err and "cursor 29" in err
    _, _, err = run_cli(["tail", str(tmp_path), "--run", "sweep07", "--since", "25"], capsys)
    assert [ln for ln in err.splitlines() if "malformed" in ln] == [
        f"{tmp_path / 'sweep07' / 'metrics.jsonl'}:31: malformed JSON (Input data was truncated)"]


def test_tail_run_of_files_in_one_directory_hears_only_its_own_bad_lines(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep of files side by side (sweep/lr1.jsonl, sweep/lr2.jsonl): a run's directory is every run's, so the
    filter let the others' bad lines through."""
    from tests.helpers import run_cli

    for name in ("lr1", "lr2", "lr3"):
        f = tmp_path / "sweep" / f"{name}.jsonl"
        write_rows(f, [{"step": s, "loss": 0.5} for s in range(6)])
        if name != "lr1":
            with f.open("a") as fh:
                fh.write('{"step": 6, "lo\n')
    rc, _, err = run_cli(["tail", str(tmp_path / "sweep"), "--run", "lr1", "-n", "2"], capsys)
    assert rc == 0 and "malformed" not in err, err
    _, _, err = run_cli(["tail", str(tmp_path / "sweep"), "--run", "lr2", "-n", "2"], capsys)
    assert [ln for ln in err.splitlines() if "malformed" in ln] == [
        f"{tmp_path / 'sweep' / 'lr2.jsonl'}:7: malformed JSON (Input data was truncated)"]


def test_tail_run_of_a_tensorboard_run_tells_the_bad_records_of_each_of_its_event_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A TensorBoard run is its directory (a restart writes a second event file): a bad record in its second file is
    the run's, told to tail --run; another run's is not."""
    import time

    pytest.importorskip("tensorboard")
    writer = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    from tests.helpers import run_cli

    for run, spans in (("run1", (range(5), range(5, 10))), ("run2", (range(5),))):
        for steps in spans:
            w = writer(str(tmp_path / run))
            for i in steps:
                w.add_scalar("loss", 1 / (i + 1), i)
            w.close()
            time.sleep(1.05)  # (a new event file a second: its name holds the time)
    second = sorted((tmp_path / "run1").glob("events.out.tfevents.*"))[1]
    data = bytearray(second.read_bytes())
    data[len(data) // 2] ^= 0xFF
    second.write_bytes(bytes(data))
    _, _, err = run_cli(["tail", str(tmp_path), "--run", "run1", "-n", "2"], capsys)
    assert f"{second}: byte" in err and "checksum mismatch" in err
    _, _, err = run_cli(["tail", str(tmp_path), "--run", "run2", "-n", "2"], capsys)
    assert "checksum" not in err


def test_a_run_named_with_a_control_character_is_named_as_the_commands_list_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run directory named ``ev ESC[2J il`` is listed as ``evil`` (the escape taken out): ``--run evil`` and
    ``--baseline evil`` answered "no run 'evil' (runs: ..., evil/metrics.jsonl, ...)", so no command could name it.
    A name that is some run's own still names that run alone."""
    from tests.helpers import run_cli

    write_rows(tmp_path / "ev\x1b[2Jil" / "metrics.jsonl", [{"step": s, "loss": 0.5 + s} for s in range(4)])
    write_rows(tmp_path / "rt\u202el" / "metrics.jsonl", [{"step": s, "loss": 9.5} for s in range(4)])
    rc, out, _ = run_cli(["runs", str(tmp_path)], capsys)
    assert rc == 0 and "evil/metrics.jsonl  arm evil " in out and "rtl/metrics.jsonl  arm rtl " in out
    for argv in (["tail", "--run", "evil", "-n", "1"], ["tail", "--run", "evil/metrics.jsonl", "-n", "1"],
                 ["summary", "--run", "evil"], ["compare", "--baseline", "evil"]):
        rc, out, err = run_cli([*argv, str(tmp_path)], capsys)
        assert rc == 0 and "3.5" in out, (argv, out, err)
    rc, out, _ = run_cli(["tail", "--run", "rtl", "-n", "1", str(tmp_path)], capsys)
    assert rc == 0 and "9.5" in out and "3.5" not in out
    write_rows(tmp_path / "evil" / "metrics.jsonl", [{"step": s, "loss": 7.25} for s in range(4)])
    rc, out, _ = run_cli(["tail", "--run", "evil", "-n", "1", str(tmp_path)], capsys)
    assert rc == 0 and "7.25" in out and "3.5" not in out  # (its own name first)
