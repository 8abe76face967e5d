"""A run that dies inside ``with StepLogger(...)`` (an exception, Ctrl-C, a non-zero exit) is recorded as such in its
description, and summary, tail and tail --alerts-only say so; a run that ends normally reads as before."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from steptable import StepLogger
from steptable.table import runinfo
from tests.helpers import run_cli
from tests.logger.helpers import RUN_COLS, description, logged_run, raising


def test_a_crash_inside_the_with_block_is_recorded_and_alerted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RuntimeError):
        logged_run(tmp_path / "crash", raising(RuntimeError("CUDA out of memory")), rows=121)
    info = description(tmp_path / "crash")
    assert info["end"] == "RuntimeError" and info["closed"] is not None and info["rows"] == 121
    rc, out, _ = run_cli(["summary", str(tmp_path / "crash")], capsys)
    lines = out.splitlines()
    assert rc == 0 and lines[0].endswith(", ended with RuntimeError")
    assert lines[-2:] == ["alerts 1 (1E):", "E step 120 run ended with RuntimeError"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "crash"), "--alerts-only"], capsys)
    assert rc == 1 and out.splitlines() == ["E [crash] step 120 run ended with RuntimeError"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "crash"), "--alerts-only", "--format", "jsonl"], capsys)
    rec = json.loads(out)
    assert rc == 1 and (rec["level"], rec["kind"], rec["step"]) == ("E", "ended", 120)
    rc, out, _ = run_cli(["tail", str(tmp_path / "crash"), "-n", "2"], capsys)
    assert rc == 0 and out.splitlines()[-1] == "── crash: ended with RuntimeError ──"  # named as its alerts name it


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), SystemExit(1), SystemExit("preempted")])
def test_ctrl_c_or_a_non_zero_exit_is_an_interruption_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stop: BaseException
) -> None:
    """Someone (or a scheduler's SIGTERM) stopped the run: not a failure of it, so W, and tail --alerts-only exits 0;
    but it did not finish, which the summary and the alerts say."""
    with pytest.raises(type(stop)):
        logged_run(tmp_path / "r", raising(stop), arm="A")
    assert description(tmp_path / "r", "A")["end"] == "interrupted"
    rc, out, _ = run_cli(["summary", str(tmp_path / "r")], capsys)
    assert rc == 0 and out.splitlines()[0].endswith(", interrupted")
    assert out.splitlines()[-2:] == ["alerts 1 (1W):", "W step 4 run interrupted"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "r"), "--alerts-only"], capsys)
    assert rc == 0 and out == "W [A] step 4 run interrupted\n"


def _normal_description(tmp_path: Path) -> dict[str, Any]:
    sl = StepLogger(RUN_COLS, run_dir=tmp_path / "plain", console=False, alerts=False)
    for s in range(5):
        sl.log({"step": s, "loss": 1 / (s + 1)})
    sl.close()
    return description(tmp_path / "plain")


@pytest.mark.parametrize("stop", [None, SystemExit(0), SystemExit(None), SystemExit(False)])
def test_a_normal_end_or_exit_0_reads_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stop: BaseException | None
) -> None:
    if stop is None:
        logged_run(tmp_path / "r", None)
    else:
        with pytest.raises(SystemExit):
            logged_run(tmp_path / "r", raising(stop))
    info = description(tmp_path / "r")
    assert "end" not in info and set(info) == set(_normal_description(tmp_path))  # the file as before the field
    rc, out, _ = run_cli(["summary", str(tmp_path / "r")], capsys)
    assert rc == 0 and out.splitlines()[0].endswith(", ended") and out.splitlines()[-1] == "alerts 0"
    rc, out, _ = run_cli(["tail", str(tmp_path / "r"), "--alerts-only"], capsys)
    assert (rc, out) == (0, "")
    rc, out, _ = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0 and "──" not in out


def test_an_older_description_without_the_field_reads_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file an older logger wrote (no ``end``) is a normal end; a newer file is valid version 1 for an older
    reader (the version is unchanged, and parse() accepts it whole); an ``end`` that is not a type name is ignored,
    never the file."""
    with pytest.raises(RuntimeError):
        logged_run(tmp_path / "r", raising(RuntimeError()))
    path = tmp_path / "r" / "steptable.json"
    new = description(tmp_path / "r")
    assert new["end"] == "RuntimeError"
    parsed = runinfo.parse(path.read_bytes(), tmp_path / "r" / "metrics.jsonl")
    assert parsed is not None and parsed["steptable"] == 1 and runinfo.columns(parsed) is not None
    for end in (None, 5, "", "a b\x1b[31m", "x" * 65, ["RuntimeError"]):
        old = {k: v for k, v in new.items() if k != "end"} if end is None else {**new, "end": end}
        path.write_text(json.dumps(old))
        rc, out, _ = run_cli(["summary", str(tmp_path / "r")], capsys)
        assert rc == 0 and out.splitlines()[0].endswith(", ended") and out.splitlines()[-1] == "alerts 0"
        rc, out, _ = run_cli(["tail", str(tmp_path / "r"), "--alerts-only"], capsys)
        assert (rc, out) == (0, "")
        assert runinfo.parse(path.read_bytes(), tmp_path / "r" / "metrics.jsonl") is not None
        rc, out, _ = run_cli(["legend", str(tmp_path / "r")], capsys)
        assert rc == 0 and out.startswith("steplogger")  # the logger's own columns: the file was read


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
    assert alerts == ["E [r] step 1 run ended with RuntimeError"] and tails["--alerts-only"].error_alert
    assert [line for line in text if "ended" in line] == ["── r: ended with RuntimeError ──"]
    assert text[-1].startswith("──") and text[-2].split() == ["1", "0.250"]  # under the run's last row
