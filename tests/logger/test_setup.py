"""steptable.logger.setup: setup_logging's console and verbose file: a piped stdout without escapes, colour
rules, the caller's line, console=False, output that cannot be encoded or written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from loguru import logger

from steptable import Col, StepLogger, setup_logging
from steptable.logger.setup import use_colour
from steptable.logger.writer import RunWriter
from tests.logger.helpers import EMA_COLS

SCRIPT = textwrap.dedent(
    """
    import sys
    from steptable import StepLogger, setup_logging
    from steptable.schemas import routing_columns
    from tqdm import tqdm
    from loguru import logger
    mode = sys.argv[1]
    setup_logging("t", log_dir=sys.argv[2])
    setup_logging("t", log_dir=sys.argv[2])   # twice: no duplicate sinks
    if mode == "closed":
        sys.stdout.close()
    sl = StepLogger(routing_columns(), run_dir=sys.argv[2] + "/arm", arm="arm", alerts=False)
    for step in tqdm(range(30), file=sys.stderr, disable=True):
        odd = mode == "odd" and step == 3  # a lone surrogate (cut UTF-16) and a non-ASCII arrow on an ASCII stdout
        sl.log({"step": step, "rew": "x\\ud800\u4e2dy" if odd else 0.5, "gt_s": (1, 2)})
    logger.warning("careful")
    sl.close()
    sys.stderr.write("LOOP-FINISHED\\n")
    """
)


def _run(mode: str, tmp_path: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60
    )


def test_piped_stdout_is_ansi_free_one_icon_per_line(tmp_path: Path) -> None:
    proc = _run("pipe", tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b" not in out
    lines = out.splitlines()
    assert sum(re.match(r"I +step ", line) is not None for line in lines) == 2  # rows 0 and 20
    assert sum(re.match(r"I +5 ", line) is not None for line in lines) == 1  # exactly once: sinks not duplicated
    assert "W careful" in out
    log_files = list(tmp_path.glob("*.log"))
    assert len(log_files) == 1 and "careful" in log_files[0].read_text()  # set up twice: still one verbose file
    assert len((tmp_path / "arm" / "metrics.jsonl").read_text().splitlines()) == 30


def test_force_color_colours_a_pipe(tmp_path: Path) -> None:
    proc = _run("pipe", tmp_path, {"FORCE_COLOR": "1"})
    assert "\x1b[" in proc.stdout
    proc = _run("pipe", tmp_path, {"NO_COLOR": "1"})
    assert "\x1b" not in proc.stdout


def test_unencodable_text_does_not_stop_the_console(tmp_path: Path) -> None:
    proc = _run("odd", tmp_path, {"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert "console output failed" not in proc.stderr and "Logging error" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert any(re.match(r"I +3 ", line) for line in lines)  # the odd row, its characters replaced
    assert any(re.match(r"I +29 ", line) for line in lines) and "end of run: 30 rows" in proc.stdout
    assert "gt_s?" in proc.stdout  # the header's arrow, replaced for an ASCII stdout
    headers = [line for line in lines if re.match(r"I +step ", line)]
    rows = [line for line in lines if re.match(r"^I +\d+ ", line)]
    # a wide character became "??" (the rew column widened for it at row 3: each row as wide as the header over it)
    assert len(rows) == 30 and all(len(line) == len(headers[-1]) for line in rows[3:])


def test_closed_stdout_loop_survives(tmp_path: Path) -> None:
    proc = _run("closed", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "LOOP-FINISHED" in proc.stderr
    assert proc.stderr.count("console output failed") == 1
    assert len((tmp_path / "arm" / "metrics.jsonl").read_text().splitlines()) == 30


def test_setup_logging_returns_verbose_path(tmp_path: Path) -> None:
    path = setup_logging("my run/1", log_dir=tmp_path)
    assert path.parent == tmp_path and path.name.endswith("_my_run_1.log")
    logger.debug("debug line")
    assert "debug line" in path.read_text()


def test_verbose_log_on_a_full_disk_is_reported_once(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import os, sys
        from loguru import logger
        from steptable import setup_logging
        path = setup_logging("t", log_dir=sys.argv[1])
        os.replace(path, path.with_suffix(".old"))
        os.symlink("/dev/full", path)
        setup_logging("t", log_dir=sys.argv[1])  # the same run again: the same file, which is now a full disk
        for i in range(50):
            logger.info(f"row {i}")
        sys.stderr.write("DONE\\n")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "DONE" in proc.stderr, proc.stderr
    assert proc.stderr.count("cannot write the verbose log") == 1 and "Traceback" not in proc.stderr
    assert proc.stdout.count("I row") == 50


def test_a_relative_log_dir_in_a_deleted_working_directory_leaves_the_console(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """The working directory deleted under the job: the verbose log cannot be opened, which is said, and the
    console works. setup_logging raised FileNotFoundError (making the log's path absolute), from inside training
    where an adapter sets the sinks up at the first row."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.chdir(scratch)
    scratch.rmdir()
    setup_logging("t", log_dir="logs")
    logger.info("row 1")
    out, err = capfd.readouterr()
    assert out == "I row 1\n" and err.count("cannot open the verbose log") == 1, err


def test_verbose_log_names_the_callers_line(tmp_path: Path) -> None:
    from steptable import setup_logging

    path = setup_logging("caller", log_dir=tmp_path)
    sl = StepLogger(EMA_COLS, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    sl.close()
    text = path.read_text()
    line = sys._getframe().f_lineno - 3  # the sl.log(...) call above
    # the file by name (a script is "__main__" as a module), and the line of the caller, not of steptable
    assert f"{Path(__file__).name}:{line} |" in text and "logger.py:" not in text


def test_console_false_keeps_warnings_off_the_console(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable import setup_logging

    path = setup_logging("quiet", log_dir=tmp_path)
    sl = StepLogger(EMA_COLS, alerts=False, console=False)
    sl._writer = RunWriter("/dev/full", sl._warn)
    sl.log({"step": 0})
    sl.close()
    assert "cannot write /dev/full" not in capsys.readouterr().out  # a TUI owns that terminal
    assert "cannot write /dev/full" in path.read_text()


def test_no_colour_on_a_dumb_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert use_colour(Tty())
    monkeypatch.setenv("TERM", "dumb")
    assert not use_colour(Tty())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_colour(Tty())


def test_console_false_sends_alerts_to_the_verbose_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from steptable import setup_logging

    path = setup_logging("quiet-alerts", log_dir=tmp_path)
    with StepLogger([Col("step", 4, "step", "d"), Col("loss", 6, "loss")], console=False) as sl:
        for step in range(3):
            sl.log({"step": step, "loss": float("nan") if step == 2 else 0.5})
    assert "non-finite" not in capsys.readouterr().out
    text = path.read_text()
    assert "loss non-finite" in text and "   2 " not in text  # the alert, not the rows


def test_each_console_message_is_flushed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class Recorder:
        encoding = "utf-8"

        def write(self, text: str) -> int:
            calls.append(f"write {text!r}")
            return len(text)

        def flush(self) -> None:
            calls.append("flush")

    monkeypatch.setattr(sys, "stdout", Recorder())
    setup_logging("flushed", log_dir=tmp_path / "logs", colour=False)
    logger.info("one")
    logger.info("two")
    assert calls == ["write 'I one\\n'", "flush", "write 'I two\\n'", "flush"]


def _logged_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, colour: bool = False,
                  extra_sink: list[str] | None = None) -> tuple[str, list[str]]:
    """What 30 rows (headers and the end of run included) print and put in the verbose file, each file line without
    its time."""
    log = setup_logging(name, log_dir=tmp_path / name, colour=colour)
    if extra_sink is not None:  # a sink of the trainer's own
        logger.add(extra_sink.append, level="INFO", format="{message}")
    cols = [Col("step", 4, "step", "d"), Col("loss", 6, "loss", None, "the loss"), Col("n", 5, "n", "frac")]
    sl = StepLogger(cols, alerts=False, header_every=10)
    for step in range(30):
        sl.log({"step": step, "loss": 0.5 / (step + 1), "n": (step, 32)})
    sl.close()
    logger.warning("careful")
    out = capsys.readouterr().out
    file = [line.split(" | ", 1)[1] for line in log.read_text(encoding="utf-8").splitlines() if " | " in line]
    return out, file


def test_rows_written_past_loguru_are_the_lines_loguru_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """setup_logging's own sinks get a row's lines without loguru's record: stdout and the verbose file (its level,
    the caller's file and line) read as loguru writes them, which it still does for a colour terminal, for another
    sink beside them and for warnings."""
    import steptable.logger.setup as st_setup

    calls: list[str] = []
    real = st_setup.write_info

    def counted(text: str, frame: object) -> bool:
        done = real(text, frame)
        calls.append("direct" if done else "loguru")
        return done

    monkeypatch.setattr(st_setup, "write_info", counted)
    direct = _logged_lines(tmp_path, capsys, "direct")
    assert calls and set(calls) == {"direct"}
    monkeypatch.setattr(st_setup, "write_info", lambda text, frame: False)
    assert direct == _logged_lines(tmp_path, capsys, "loguru")
    assert "INFO     | test_setup.py:" in direct[1][1] and "W careful" in direct[0]

    monkeypatch.setattr(st_setup, "write_info", counted)
    calls.clear()
    seen: list[str] = []
    out, _ = _logged_lines(tmp_path, capsys, "beside", extra_sink=seen)
    assert set(calls) == {"loguru"} and len([s for s in seen if s.lstrip().startswith("2 ")]) == 1
    calls.clear()
    out, _ = _logged_lines(tmp_path, capsys, "colour", colour=True)
    assert set(calls) == {"loguru"} and "\x1b[" in out
