"""StepLogger.close and the end of a run: the run is marked ended (also under a second Ctrl-C, a handler that
closes and exits, or os._exit), the end-of-run dump says how the run ended and what table.txt holds, and a log()
after close is said once."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steptable import Col, StepLogger
from steptable.table import render, runinfo
from tests.logger.helpers import (
    CUSTOM_COLS,
    EMA_COLS,
    LOSS_COLS,
    RUN_COLS,
    SIGTERM_IN_A_READ,
    TABLE_COLS,
    Clock,
    closed_field,
    description,
    logged_run,
)


def test_a_handler_s_close_then_exit_1_records_the_interruption(tmp_path: Path) -> None:
    """``def on_term(s, f): sl.close(); sys.exit(1)``, run inside log() (a value read calls it) or between rows: the
    run is closed as ended, and the exit that leaves the ``with`` block then marks it interrupted."""

    class Synced:
        def item(self) -> float:
            sl.close()
            sys.exit(1)

    with pytest.raises(SystemExit), StepLogger(RUN_COLS, run_dir=tmp_path / "a", console=False, alerts=False) as sl:
        sl.log({"step": 0, "loss": 0.5})
        sl.log({"step": 1, "loss": Synced()})
    info = description(tmp_path / "a")
    assert info["end"] == "interrupted" and info["closed"] is not None and (tmp_path / "a" / "table.txt").exists()

    def between_rows(sl: StepLogger) -> None:
        sl.close()
        sys.exit(1)

    with pytest.raises(SystemExit):
        logged_run(tmp_path / "b", between_rows)
    assert description(tmp_path / "b")["end"] == "interrupted"


def test_close_in_a_finally_or_an_except_marks_the_run_ended_by_the_exception_in_flight(tmp_path: Path) -> None:
    """``try: loop() finally: sl.close()`` and a sweep's ``except MemoryError: sl.close()`` mark the run as
    ``with StepLogger`` does (they read as runs that ended well); a close() with nothing in flight marks none, and
    one after an exception was handled and left behind neither."""

    def loop(sl: StepLogger) -> None:
        for step in range(3):
            sl.log({"step": step, "loss": 0.5})
        raise MemoryError("CUDA out of memory")

    sl = StepLogger(RUN_COLS, run_dir=tmp_path / "finally", console=False, alerts=False)
    with pytest.raises(MemoryError):
        try:
            loop(sl)
        finally:
            sl.close()
    assert description(tmp_path / "finally")["end"] == "MemoryError"
    sl = StepLogger(RUN_COLS, run_dir=tmp_path / "except", console=False, alerts=False)
    try:
        loop(sl)
    except MemoryError:
        sl.close()
    assert description(tmp_path / "except")["end"] == "MemoryError"
    sl = StepLogger(RUN_COLS, run_dir=tmp_path / "handled", console=False, alerts=False)
    try:
        loop(sl)
    except MemoryError:
        pass
    sl.close()
    info = description(tmp_path / "handled")
    assert info.get("end") is None and info["closed"] is not None
    try:  # a with block that ends well inside an except (a retry): the block's end, not the handled error's
        raise MemoryError("first attempt")
    except MemoryError:
        with StepLogger(RUN_COLS, run_dir=tmp_path / "retry", console=False, alerts=False) as sl:
            sl.log({"step": 0, "loss": 0.5})
    assert description(tmp_path / "retry").get("end") is None


def test_the_end_of_run_dump_says_how_the_run_ended(tmp_path: Path, captured: list[str]) -> None:
    with pytest.raises(ValueError), StepLogger(RUN_COLS, run_dir=tmp_path, arm="A", alerts=False) as sl:
        sl.log({"step": 0, "loss": 0.5})
        raise ValueError("bad batch")
    assert "end of run: 1 rows, arm A, ended with ValueError" in "".join(captured)


def test_the_run_is_marked_ended_before_table_txt_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sl = StepLogger(TABLE_COLS, run_dir=tmp_path, arm="A", console=False, alerts=False)
    for step in range(5):
        sl.log({"step": step, "loss": 0.5})
    seen: list[Any] = []
    write = sl.write_table

    def table() -> Path | None:
        seen.append(closed_field(tmp_path, "A"))  # what a reader sees while the table is written
        return write()

    monkeypatch.setattr(sl, "write_table", table)
    sl.close()
    assert len(seen) == 1 and seen[0] is not None and (tmp_path / "table.txt").exists()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_during_table_txt_leaves_the_run_ended_and_reaches_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, captured: list[str], stop: type[BaseException]
) -> None:
    """Ctrl-C (or a SIGTERM handler's sys.exit) while table.txt is rendered: the run is marked ended, the table of
    the earlier close stays whole (no half-written file, no temporary left), the dump is still printed, and the
    interrupt is raised again from close()."""
    with StepLogger(TABLE_COLS, run_dir=tmp_path, alerts=False) as sl:
        for step in range(3):
            sl.log({"step": step, "loss": 0.1})
    before = (tmp_path / "table.txt").read_text()
    sl = StepLogger(TABLE_COLS, run_dir=tmp_path, alerts=False)  # resumed
    for step in range(2, 400):
        sl.log({"step": step, "loss": 0.9})
    compile_row = render.compile_row

    def interrupted(cols: tuple[Col, ...]) -> Callable[[Mapping[str, Any]], str]:
        rendered = compile_row(cols)
        count = [0]

        def row(cells: Mapping[str, Any]) -> str:
            count[0] += 1
            if count[0] == 200:
                raise stop()
            return rendered(cells)

        return row

    monkeypatch.setattr(render, "compile_row", interrupted)
    with pytest.raises(stop):
        sl.close()
    assert closed_field(tmp_path) is not None
    assert (tmp_path / "table.txt").read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        ".metrics.jsonl.lock", "metrics.jsonl", "steptable.json", "table.txt"]  # (the lock file is no temporary)
    assert "end of run: 398 rows" in "".join(captured)
    sl.close()  # closed: nothing again, nothing raised


def test_dump_shows_values_as_logged_not_as_updated_in_place(captured: list[str]) -> None:
    ema = np.zeros(())
    sl = StepLogger(EMA_COLS, alerts=False, dump_rows=3)
    for step in range(3):
        ema += 1.5  # the loop keeps one accumulator and updates it in place
        sl.log({"step": step, "loss": 0.5, "ema": ema})
    sl.close()
    dump = "".join(captured).split("end of run")[1]
    assert [line.split()[-1] for line in dump.splitlines()[2:5]] == ["1.5", "3.0", "4.5"]  # one notation


def test_close_still_dumps_when_table_txt_cannot_be_written(
    tmp_path: Path, captured: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sl = StepLogger(EMA_COLS, run_dir=tmp_path, alerts=False)
    for step in range(3):
        sl.log({"step": step, "loss": 0.5})

    def full(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sl, "write_table", full)
    sl.close()
    text = "".join(captured)
    assert "end of run: 3 rows" in text and "table.txt" not in text  # no promise of a file that is not there
    assert "writing table.txt failed" in capsys.readouterr().err


def test_log_after_close_is_reported_once(capsys: pytest.CaptureFixture[str]) -> None:
    sl = StepLogger(EMA_COLS, alerts=False, console=False)
    sl.log({"step": 0})
    sl.close()
    assert sl.log({"step": 1}) is None and sl.log({"step": 2}) is None
    assert capsys.readouterr().err.count("called after close()") == 1


class _Announcing:
    """``lock`` that sets ``entering`` as ``thread`` is about to wait for it."""

    def __init__(self, lock: Any, thread: Callable[[], bool], entering: threading.Event) -> None:
        self.lock, self.thread, self.entering = lock, thread, entering

    def __enter__(self) -> Any:
        if self.thread():
            self.entering.set()
        return self.lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)


def test_a_row_that_another_threads_close_came_before_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    """An evaluation thread logs as the loop's thread closes: its row, found closed only once the lock is its, is
    not recorded, and that is said as any log() after close() is (never dropped unsaid)."""
    sl = StepLogger(EMA_COLS, alerts=False, console=False)
    sl.log({"step": 0})
    lock, entering, got = sl._lock, threading.Event(), []
    evaluation = threading.Thread(target=lambda: got.append(sl.log({"step": 1})))
    sl._lock = _Announcing(lock, lambda: threading.current_thread() is evaluation, entering)  # type: ignore[assignment]
    with lock:  # the loop's thread: the row's check that the logger is open is passed before close() comes
        evaluation.start()
        assert entering.wait(60)
        sl.close()
    evaluation.join(60)
    assert got == [None]
    assert capsys.readouterr().err.count("called after close()") == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_close_returns_when_the_jsonl_is_not_a_regular_file(tmp_path: Path) -> None:
    """metrics.jsonl as a FIFO (or /dev/stdout): rows stream into it, and close() does not try to read it back
    for table.txt (it would block forever, or read /dev/full's endless zeros). Run in a child with a deadline."""
    script = textwrap.dedent(f"""
        import os, threading
        from steptable import Col, StepLogger
        run = {str(tmp_path / "arm")!r}
        os.makedirs(run)
        fifo = os.path.join(run, "metrics.jsonl")
        os.mkfifo(fifo)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there before the first row
        sl = StepLogger([Col("step", 5, "step", "d", "step")], run_dir=run, console=False)
        for i in range(3):
            sl.log({{"step": i}})
        sl.close()
        got = os.read(rfd, 1 << 16)
        print(got.count(b"\\n"), os.path.exists(os.path.join(run, "table.txt")))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["3", "False"]


def test_the_dump_sits_under_the_streamed_rows(captured: list[str]) -> None:
    with StepLogger(EMA_COLS, alerts=False) as sl:
        row = sl.log({"step": 1, "loss": 0.5, "ema": 0.25})
    dump = captured[-1].rstrip("\n").splitlines()
    assert dump[0].endswith("end of run: 1 rows") and row is not None
    assert "  " + row in dump[1:]  # two cells in, as the icon and its space put the streamed row: column for column


def _closed(run_dir: Path, arm: str | None = None) -> float | None:
    return runinfo.closed_at(json.loads((run_dir / runinfo.file_name(arm)).read_text()))


class _Synced:
    """A 0-d device scalar: ``item()`` is where the loop waits for the GPU, and where a SIGTERM lands."""

    ndim = 0

    def __init__(self, value: float, on_read: Any = None) -> None:
        self.value, self.on_read = value, on_read

    def item(self) -> float:
        if self.on_read is not None:
            self.on_read()
        return self.value


def test_a_handler_that_closes_and_exits_inside_log_still_closes_the_run(tmp_path: Path) -> None:
    """``def on_term(s, f): lg.close(); sys.exit(0)`` running inside log(): the close deferred to the end of the row
    still runs though the SystemExit leaves log() first: the table is written and the run reads as ended."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})

    def on_term() -> None:
        sl.close()
        raise SystemExit(0)

    with pytest.raises(SystemExit):
        sl.log({"step": 1, "loss": _Synced(0.25, on_term)})
    assert _closed(tmp_path) is not None
    assert (tmp_path / "table.txt").exists()
    assert sl.log({"step": 2, "loss": 0.1}) is None  # closed: nothing more is written


def test_a_row_a_handler_logs_before_it_closes_and_exits_is_written(tmp_path: Path) -> None:
    """``def on_term(s, f): lg.log(last); lg.close(); sys.exit(0)`` running inside log(): the handler's row waits for
    the row in progress, which the SystemExit then leaves; close() still writes it (a row logged before close() is
    never lost) and counts it."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})

    def on_term() -> None:
        sl.log({"step": 99, "loss": 9.0})
        sl.close()
        raise SystemExit(0)

    with pytest.raises(SystemExit):
        sl.log({"step": 1, "loss": _Synced(0.25, on_term)})  # (its value never read: the row is not logged)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 99]
    assert description(tmp_path)["rows"] == 2 and _closed(tmp_path) is not None


def test_a_row_a_handler_logs_before_a_ctrl_c_in_the_same_row_is_written_at_close(tmp_path: Path) -> None:
    """A handler logs a row inside log() (it waits for the row in progress), then a Ctrl-C lands in that same row:
    the ``with`` block's close() writes the handler's row."""

    def on_usr1_then_ctrl_c() -> None:
        sl.log({"step": 99, "loss": 9.0})
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), StepLogger(LOSS_COLS, run_dir=tmp_path, console=False,
                                                      alerts=False) as sl:
        sl.log({"step": 0, "loss": 0.5})
        sl.log({"step": 1, "loss": _Synced(0.25, on_usr1_then_ctrl_c)})
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 99]
    assert description(tmp_path)["end"] == "interrupted"


def test_a_row_a_sigterm_handler_logs_inside_a_row_before_sys_exit_is_written_at_the_exit(tmp_path: Path) -> None:
    """``def on_term(s, f): lg.log({"step": 99, ...}); sys.exit(1)``, the script never calling close(), SIGTERM
    landing while a row is logged (a device value's read, where a GPU loop waits): the handler's row, which waits
    for the row in progress that the exit leaves, is written as the interpreter exits."""
    script = SIGTERM_IN_A_READ + textwrap.dedent(f"""
        from steptable import Col, StepLogger
        sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", ".3f")], run_dir={str(tmp_path)!r},
                        console=False, alerts=False)

        def on_term(s, f):
            sl.log({{"step": 99, "loss": 9.0}})
            sys.exit(1)

        signal.signal(signal.SIGTERM, on_term)
        sl.log({{"step": 0, "loss": 0.5}})
        sl.log({{"step": 1, "loss": Read(0.25)}})
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows][-1] == 99


def test_a_handler_that_closes_during_a_dump_after_close_leaves_the_run_as_it_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dump() after close() still marks its thread inside the logger while it catches up: a handler's close() then
    (a second SIGTERM) finds the run closed and says nothing new of it (not a later end)."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    sl.close()
    before = description(tmp_path)
    ended = before["closed"]
    monkeypatch.setattr(sl._backlog, "catch_up", lambda drain=False: sl.close())  # (the handler, in the catch-up)
    monkeypatch.setattr(time, "time", lambda: ended + 100.0)
    sl.dump()
    assert description(tmp_path) == before


def test_a_handler_that_closes_then_leaves_with_os_exit_has_marked_the_run_ended(tmp_path: Path) -> None:
    """os._exit() after close() never returns to the row: the run is marked ended by close() itself."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    seen: list[float | None] = []

    def on_term() -> None:
        sl.close()
        seen.append(_closed(tmp_path))  # what a reader sees if the process ended here

    sl.log({"step": 1, "loss": _Synced(0.25, on_term)})
    assert seen and seen[0] is not None
    # the handler returned: the row was finished and the run closed properly after it
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1]
    assert (tmp_path / "table.txt").exists() and _closed(tmp_path) is not None


def test_the_dump_keeps_no_reference_to_big_arrays(tmp_path: Path) -> None:
    """A per-token loss array (or a tensor with its autograd graph) logged each step is not kept alive by the
    last dump_rows rows: the dump shows its type and shape instead."""
    cols = [*LOSS_COLS, Col("tok_loss", 16, "tok_loss")]
    sl = StepLogger(cols, run_dir=tmp_path, console=False, alerts=False)
    arr = np.zeros((4, 2048))
    ref = weakref.ref(arr)
    sl.log({"step": 0, "loss": 1.0, "tok_loss": arr})
    del arr
    gc.collect()
    assert ref() is None
    assert "ndarray[4x2048]" in sl.dump()
    small = np.array([3, 8])
    sl.log({"step": 1, "tok_loss": small})  # a small 1-d array is still its numbers
    assert "3/8" in sl.dump() or "(3, 8)" in sl.dump() or "3, 8" in sl.dump()
    sl.close()


def test_steps_that_go_back_are_told_in_the_end_note(tmp_path: Path, captured: list[str]) -> None:
    """A per-epoch step counter (0..3 each epoch): every reader takes each epoch as a restart, and table.txt holds
    the last epoch; the end-of-run note says so (not "all rows")."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path)
    for e in range(3):
        for s in range(4):
            sl.log({"step": s, "loss": e + s / 10})
    sl.close()
    end = next(x for x in captured if "every column" in x)
    assert "the 4 steps (12 rows logged: a step went back 2 time(s)" in end and "all rows" not in end
    merged = StepLogger(LOSS_COLS, run_dir=tmp_path / "m")  # a train row and an eval row a step: nothing went back
    for s in range(5):
        merged.log({"step": s, "loss": 0.5})
        merged.log({"step": s, "acc": 0.5})
    merged.close()
    end = [x for x in captured if "every column" in x][-1]
    assert "the 5 steps (10 rows logged: rows of one step merged)" in end, end
    plain = StepLogger(LOSS_COLS, run_dir=tmp_path / "p")
    for s in range(3):
        plain.log({"step": s, "loss": 0.5})
    plain.close()
    assert "all rows, every column" in "".join(captured)


def test_the_dump_keeps_no_nested_mapping_of_tensors() -> None:
    """{"stats": {"act": big}}: the dump keeps neither the leaf nor the mapping that holds it (the tensor would
    stay alive with it)."""
    sl = StepLogger([*LOSS_COLS, Col("stats/act", 16, "act")], console=False, alerts=False)
    arr = np.zeros((64, 64))
    ref = weakref.ref(arr)
    sl.log({"step": 0, "loss": 1.0, "stats": {"act": arr}})
    del arr
    gc.collect()
    assert ref() is None and "ndarray[64x64]" in sl.dump()


def _interrupt_once(monkeypatch: pytest.MonkeyPatch, name: str, when: Callable[[tuple[Any, ...]], bool],
                    after: bool = False) -> list[int]:
    """``os.<name>`` raising KeyboardInterrupt the first time ``when(args)`` holds (``after``: once the real call
    is done, as a Ctrl-C landing right after it)."""
    real = getattr(os, name)
    fired: list[int] = []

    def wrapped(*args: Any, **kw: Any) -> Any:
        if fired or not when(args):
            return real(*args, **kw)
        fired.append(1)
        if after:
            got = real(*args, **kw)
            if isinstance(got, int):
                os.close(got)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, name, wrapped)
    return fired


def _is_description(args: tuple[Any, ...]) -> bool:
    return any(Path(a).name.startswith(f".{runinfo.NAME}.") for a in args if isinstance(a, (str, Path)))


@pytest.mark.parametrize(("name", "after"), [("replace", False), ("open", True)])
def test_a_second_ctrl_c_while_close_marks_the_run_ended_still_marks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, after: bool
) -> None:
    """Interrupted while the description is written (right after its temporary file is made, or at the rename):
    steptable.json still says "closed" (else the run reads as stalled for ever) and no stray .tmp stays beside
    it."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    fired = _interrupt_once(monkeypatch, name, _is_description, after)
    with pytest.raises(KeyboardInterrupt):
        sl.close()
    assert fired
    assert runinfo.closed_at(description(tmp_path)) is not None and description(tmp_path)["rows"] == 1
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [".metrics.jsonl.lock", "metrics.jsonl", runinfo.NAME]  # (no table: interrupted)


class _LockInterruptedOnce:
    """The logger's lock, with a Ctrl-C landing as close() takes it (before any of close()'s steps ran)."""

    def __init__(self, lock: Any) -> None:
        self.lock, self.fired = lock, False

    def __enter__(self) -> Any:
        if not self.fired:
            self.fired = True
            raise KeyboardInterrupt
        return self.lock.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self.lock.__exit__(*exc)


def test_a_ctrl_c_as_close_begins_still_marks_the_run_ended(tmp_path: Path) -> None:
    """A second SIGINT landing as __exit__ enters close(), before any of its steps: the run is still marked
    ended (not read as stalled)."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    sl._lock = _LockInterruptedOnce(sl._lock)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        sl.close()
    assert runinfo.closed_at(description(tmp_path)) is not None


@pytest.mark.parametrize("what", ["file", "directory"])
def test_the_dump_says_the_table_misses_the_rows_of_a_deleted_jsonl(tmp_path: Path, what: str,
                                                                     clock: Clock) -> None:
    """The dump says table.txt misses rows when the JSONL was deleted mid-run (it holds the 3 rows after the
    deletion, the writer's check due at the first of them), not "all rows, every column: table.txt"."""
    run = tmp_path / "run"
    sl = StepLogger(LOSS_COLS, run_dir=run, console=False, alerts=False)
    for step in range(6):
        if step == 3:
            (run / "metrics.jsonl").unlink() if what == "file" else shutil.rmtree(run)
            clock.advance()
        sl.log({"step": step, "loss": 0.5})
    sl.close()
    assert "3 of 6 rows (metrics.jsonl was deleted during the run), every column:" in sl.dump()
    assert len((run / "table.txt").read_text().splitlines()) == 1 + 3


def test_a_run_that_kept_its_jsonl_says_all_rows(tmp_path: Path) -> None:
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    for step in range(4):
        sl.log({"step": step, "loss": 0.5})
    sl.close()
    assert "all rows, every column:" in sl.dump()


def test_a_non_text_arm_costs_no_row_and_a_failed_table_still_marks_the_end(tmp_path: Path) -> None:
    d = tmp_path / "r"
    d.mkdir()
    (d / "table.3.txt").mkdir()  # table.txt cannot be written (a directory in its place)
    (d / "table.txt").mkdir()
    sl = StepLogger(CUSTOM_COLS, run_dir=d, arm=3, console=False, alerts=False)  # type: ignore[arg-type]  # a seed number
    assert all(sl.log({"step": s, "reward/mean": 0.5}) is not None for s in range(3))
    sl.close()
    info = json.loads((d / "steptable.3.json").read_text())
    assert info["closed"] is not None and info["rows"] == 3
