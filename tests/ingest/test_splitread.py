"""steptable.ingest.splitread: a big JSONL's first one-shot read split across two processes gives the stores, the
bad lines and the ``summary`` text one process gives, on hostile files; the child's chunks are taken only where
they are proven the same, and a child that dies, hangs or is interrupted leaves nothing behind."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
import mmap
import os
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steptable import Col, StepLogger
from steptable.alerts.replaced import read_replaced
from steptable.cli.reading import read_runs
from steptable.ingest import forkgate, splitread
from steptable.ingest.files.tail import BLOCK
from steptable.ingest.source import TailSource
from tests.helpers import age, reap, run_cli, spy_forks

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="the child is forked")

Cap = pytest.CaptureFixture[str]
#: every line of the files below is this many bytes (padded with spaces inside its object), so where the read is
#: cut is known before the file is written
WIDTH = 320
ROWS = 8000  # (2.6 MB: a cut at 0.42 of it is 4 blocks in)


def _row(step: int, **extra: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"step": step, "loss": 1 / (1 + step), "reward/mean": math.sin(step) / 2 + 0.5,
                         "kl": abs(math.cos(step)) / 10, "grad_norm": 0.5 + (step % 7) / 10}
    r.update(extra)
    return r


def _nonfinite(step: int) -> str:
    """A row of the non-finite literals Python's json writes (not JSON: rewritten before a decode)."""
    return f'{{"step": {step}, "loss": NaN, "reward/mean": Infinity, "kl": -Infinity, "grad_norm": 1}}'


def _line(obj: Any, end: str = "\n") -> bytes:
    """``obj`` as a JSON line of exactly WIDTH bytes (spaces before its closing brace; text as it is)."""
    text = obj if isinstance(obj, str) else json.dumps(obj)
    pad = WIDTH - len(text.encode()) - len(end)
    assert pad >= 0, text
    body = text[:-1] + " " * pad + text[-1] if text.endswith("}") else text + " " * pad
    return (body + end).encode()


def _cut_line(rows: int = ROWS) -> int:
    """The index of the first line the child parses in a file of ``rows`` lines of WIDTH bytes."""
    stop = round(rows * WIDTH * splitread.SHARE / BLOCK) * BLOCK
    return stop // WIDTH


def _write(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def _rows_file(path: Path, edit: Callable[[int, int], Any] | None = None, rows: int = ROWS) -> Path:
    """A file of ``rows`` lines; ``edit(i, cut)`` may give line ``i`` instead (a row, a text, or None: the row)."""
    cut = _cut_line(rows)
    lines = []
    for i in range(rows):
        got = edit(i, cut) if edit is not None else None
        lines.append(got if isinstance(got, bytes) else _line(_row(i) if got is None else got))
    return _write(path, lines)


def _dump(stores: list[Any]) -> str:
    """Everything a store holds that a reader sees, as text (NaN compares equal as text)."""
    out = []
    for s in stores:
        keys = list(s.keys)
        out.append(repr((s.run, s.arm, s.step_key, s.steps.tolist(), keys, [s.cells(k) for k in keys],
                         [s.is_integer(k) for k in keys], s.wall_times.tolist(), [str(b) for b in s.bad],
                         s.bad_count, s.resumes, [str(a) for a in s.replaced], s.dropped_keys)))
    return "\n".join(out)


def _read(path: Path, split: bool) -> tuple[str, list[str], Any]:
    follower, stores = read_runs([str(path)], io.StringIO(), read_replaced, split=split)
    parsers = [getattr(src, "parser", None) for src in follower._sources.values()]
    state = [(p.ordinal, p.last_step, p.state()) for p in parsers if p is not None]
    return _dump(stores), follower.errors, state


@pytest.fixture
def fates(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every first read split, whatever the file's size and the cores; what became of each child's chunks, in
    order: taken, or dropped (the rest read in this process); "read on" after "taken": what was appended past the
    child's end read here."""
    monkeypatch.setattr(splitread, "MIN_BYTES", 0)
    monkeypatch.setattr(forkgate, "forkable", lambda: True)
    monkeypatch.setattr(forkgate, "free_cores", lambda: 2)
    seen: list[str] = []
    carry_on, read_on = TailSource.carry_on, TailSource.read_on

    def taken(self: TailSource, parts: Any) -> bool:
        seen.append("taken")
        return carry_on(self, parts)

    def dropped(self: TailSource) -> bool:
        seen.append("read on" if seen[-1:] == ["taken"] else "dropped")
        return read_on(self)

    monkeypatch.setattr(TailSource, "carry_on", taken)
    monkeypatch.setattr(TailSource, "read_on", dropped)
    return seen


def _same(path: Path, fates: list[str]) -> str:
    """Read ``path`` in one process and split; assert they agree (stores, errors, parser); the child's fate."""
    one = _read(path, split=False)
    assert not fates
    two = _read(path, split=True)
    assert two == one
    assert len(fates) == 1
    return fates.pop()


def _arm_descriptions(run: Path, arms: tuple[str, ...]) -> None:
    for arm in arms:  # (a StepLogger's description of each arm: what makes the file's rows of it a run)
        with StepLogger([Col("step", 5, "step", "d")], run_dir=run, arm=arm, console=False, alerts=False) as sl:
            sl.log({"step": 0})


HOSTILE: dict[str, tuple[Callable[[int, int], Any], str]] = {
    # keys that change mid-file: one arrives in the second half, one stops there
    "keys change after the cut": (lambda i, c: {**_row(i), "late": i / 3} if i > c + 40 else
                                  {k: v for k, v in _row(i).items() if k != "kl"} if i > c + 90 else None, "taken"),
    "keys change at the cut": (lambda i, c: {**_row(i), "eval/score": 0.5} if i >= c else None, "taken"),
    "keys change before the cut": (lambda i, c: {**_row(i), "early": 1.0} if i >= c // 2 else None, "taken"),
    # the child's guess of the parser's state (from the first chunk and the one before the cut) misses it
    "a key seen once midway before the cut": (lambda i, c: {**_row(i), "once": 1.0} if i == c // 2 else None,
                                              "dropped"),
    "a resume restarting in the second half": (lambda i, c: _row(i - 300) if i >= c + 500 else None, "taken"),
    "a resume restarting at the cut": (lambda i, c: _row(i - 1000) if i >= c else None, "taken"),
    "a bad line at the cut": (lambda i, c: "not json at all" if i == c else None, "dropped"),
    "a bad line right after the cut": (lambda i, c: '{"step": 5, "loss": ' if i == c + 1 else None, "dropped"),
    "a line cut at the cut": (lambda i, c: json.dumps(_row(i))[:40] if i == c else None, "dropped"),
    # (line 900 is in the second chunk: the parser rests its fast path for the third and is back on it by the cut)
    "a bad line before the cut": (lambda i, c: "garbage" if i == 900 else None, "taken"),
    # (the parser then rests its fast path for a chunk: at the cut it is not in the state the child guessed)
    "a bad line in the last chunk before the cut": (lambda i, c: "garbage" if i == c - 2 else None, "dropped"),
    "a bad line in the first chunk": (lambda i, c: "garbage" if i == 5 else None, "dropped"),
    "a stepless row after the cut": (lambda i, c: {"loss": 0.5} if i == c + 7 else None, "dropped"),
    "a stepless row before the cut": (lambda i, c: {"loss": 0.5} if i == 900 else None, "taken"),
    "a fractional step after the cut": (lambda i, c: {**_row(i), "step": i + 0.5} if i == c + 3 else None,
                                        "dropped"),
    "NaN, inf, text and bools after the cut": (
        lambda i, c: _nonfinite(i)
        if i % 50 == 0 and i > c else {**_row(i), "grad_norm": "high"} if i == c + 11 else
        {**_row(i), "kl": True} if i == c + 13 else {**_row(i), "loss": None} if i == c + 17 else None, "taken"),
    "NaN, inf, text and bools throughout": (
        lambda i, c: _nonfinite(i)
        if i % 50 == 0 else {**_row(i), "tag": "math" if i % 2 else "code", "ok": i % 3 == 0}, "taken"),
    "integers past int64 and 2**53": (lambda i, c: {**_row(i), "seed": 2**70 + i, "big": 2**53 + 1}
                                      if i > c else {**_row(i), "seed": 1, "big": 1}, "taken"),
    "CRLF lines": (lambda i, c: _line(_row(i), "\r\n"), "taken"),
    "a blank line at the cut": (lambda i, c: _line("", "\n") if i == c else None, "taken"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_file_reads_the_same(name: str, tmp_path: Path, fates: list[str]) -> None:
    edit, fate = HOSTILE[name]
    path = _rows_file(tmp_path / "run" / "metrics.jsonl", edit)
    assert _same(path, fates) == fate


def test_a_file_without_a_step_key_is_read_here(tmp_path: Path, fates: list[str]) -> None:
    """Rows numbered by position: the child does not know how many rows came before its part."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl", lambda i, c: {"loss": 1 / (1 + i), "kl": 0.1})
    assert _same(path, fates) == "dropped"


def test_arms_sharing_a_file(tmp_path: Path, fates: list[str]) -> None:
    """Rows of two arms (each described by its StepLogger) interleaved, the second arm starting after the cut in
    one file and before it in another: the same runs, rows and arms."""
    for name, start in (("before", 10), ("after", _cut_line() + 30)):
        run = tmp_path / name
        _arm_descriptions(run, ("A", "B"))
        path = _rows_file(run / "metrics.jsonl", lambda i, c, start=start: {**_row(i // 2), "arm": "B"}
                          if i >= start and i % 2 else {**_row(i // 2), "arm": "A"})
        assert _same(path, fates) == "taken"
        assert len(read_runs([str(path)], io.StringIO())[1]) == 2  # (two runs: not a comparison of one)


def test_a_second_writer_after_the_cut(tmp_path: Path, fates: list[str]) -> None:
    path = _rows_file(tmp_path / "run" / "metrics.jsonl",
                      lambda i, c: {**_row(i), "writer_pid": 4242} if i > c + 20 and i % 5 == 0 else None)
    assert _same(path, fates) == "taken"


def test_an_unterminated_last_line(tmp_path: Path, fates: list[str]) -> None:
    """A writer that never ended its last row: the one-shot read's finish parses it, with the parser's state."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    with open(path, "ab") as f:
        f.write(json.dumps({**_row(ROWS), "final": 1.0}).encode())
    assert _same(path, fates) == "taken"


def _same_run(got: tuple[str, list[str], Any], serial: tuple[str, list[str], Any]) -> None:
    """The stores (the run's id and arm aside: other paths), errors and parser states of two reads agree."""
    assert got[0].split(", ", 2)[2] == serial[0].split(", ", 2)[2]
    assert got[1] == serial[1] and got[2] == serial[2]


def test_a_file_that_grows_during_the_read(tmp_path: Path, fates: list[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows appended while this process reads its part (a live run): the child's chunks are taken, and the store is
    a read in one process of the file as it ends (what the child did not read of it is read here)."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    grown = _rows_file(tmp_path / "grown" / "metrics.jsonl", rows=ROWS + 400)
    serial = _read(grown, split=False)
    poll = TailSource.poll

    def growing(self: TailSource) -> bool:
        if self.tail.stop is not None:  # (this process's part, the child forked)
            time.sleep(0.05)
            with open(path, "ab") as f:
                f.write(grown.read_bytes()[path.stat().st_size:])
        return poll(self)

    monkeypatch.setattr(TailSource, "poll", growing)
    got = _read(path, split=True)
    assert fates[0] == "taken" and fates[1:] in ([], ["read on"])
    _same_run(got, serial)
    assert not got[1]


def _growing(path: Path, grown: Path) -> Callable[[], None]:
    """What appends to ``path`` the rest of ``grown`` (the same rows and more), as a live run's writer would."""

    def append() -> None:
        with open(path, "ab") as f:
            f.write(grown.read_bytes()[path.stat().st_size:])

    return append


def _after_the_child(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> None:
    """``act()`` once the child's last frame is read, before its chunks are judged."""
    real = splitread._Frames.next
    frames: list[int] = []

    def next_frame(self: Any) -> Any:
        got = real(self)
        frames.append(1)
        if len(frames) == 2:  # (the guess, then the chunks)
            act()
        return got

    monkeypatch.setattr(splitread._Frames, "next", next_frame)


def test_rows_appended_after_the_childs_end_are_read_here(tmp_path: Path, fates: list[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The child read to the file's end, then rows were appended (a live run): its chunks are taken and the rest is
    read on from its end, as a read in one process of the file as it ends."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    grown = _rows_file(tmp_path / "grown" / "metrics.jsonl", rows=ROWS + 400)
    serial = _read(grown, split=False)

    _after_the_child(monkeypatch, _growing(path, grown))
    got = _read(path, split=True)
    assert fates == ["taken", "read on"]
    _same_run(got, serial)


@pytest.mark.parametrize("how", ["truncated and rewritten", "rewritten in place", "replaced"])
def test_a_file_rewritten_during_the_read(how: str, tmp_path: Path, fates: list[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The file rewritten (shorter, or its bytes changed in place at the same size) or replaced by another (a new
    inode at the path, longer) after the child read it: its chunks are not taken; the rest is read here as the
    follower reads a rewrite, the rows those of the file as it ends, as without a child."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    other = {"truncated and rewritten": ROWS // 2, "rewritten in place": ROWS, "replaced": ROWS + 400}[how]
    new = _rows_file(tmp_path / "new" / "metrics.jsonl", lambda i, c: {**_row(i), "loss": 2.0}, rows=other)
    serial = _read(new, split=False)

    def rewrite() -> None:
        if how == "replaced":
            os.replace(new, path)
        else:
            with open(path, "r+b") as f:
                f.truncate(0) if how == "truncated and rewritten" else None
                f.seek(0)
                f.write(new.read_bytes())

    _after_the_child(monkeypatch, rewrite)
    got = _read(path, split=True)
    assert fates == ["dropped"]
    assert got[0].split(", ", 2)[2] == serial[0].split(", ", 2)[2]  # (its rows: those of the file as it ends)
    assert got[2] == serial[2]


def _in_child(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> None:
    parent = os.getpid()
    real = splitread._pack

    def pack(*args: Any) -> Any:
        if os.getpid() != parent:
            act()
        return real(*args)

    monkeypatch.setattr(splitread, "_pack", pack)


def test_a_child_whose_numbers_outgrow_the_shared_memory(tmp_path: Path, fates: list[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory the child packs its numbers into is full (a file that grew far past its size at the fork): the
    child gives up, and the rest is read here."""
    monkeypatch.setattr(splitread, "RAW_PER_BYTE", 0)  # (one page)
    assert _same(_rows_file(tmp_path / "run" / "metrics.jsonl"), fates) == "dropped"


def test_a_chunk_whose_columns_do_not_all_fit(tmp_path: Path, fates: list[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared memory fills in the middle of a chunk's columns (the first chunk's fit, some of the second's):
    the child gives up, and the rest is read here."""
    monkeypatch.setattr(splitread, "RAW_PER_BYTE", 0)
    monkeypatch.setattr(mmap, "PAGESIZE", 50_000)  # (a chunk's numbers: 819 rows of 5, ~33 kB)
    assert _same(_rows_file(tmp_path / "run" / "metrics.jsonl"), fates) == "dropped"


def test_a_child_killed_while_it_packs(tmp_path: Path, fates: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    packs: list[int] = []

    def killed() -> None:
        packs.append(1)
        if len(packs) == 3:
            os.kill(os.getpid(), signal.SIGKILL)

    _in_child(monkeypatch, killed)
    assert _same(_rows_file(tmp_path / "run" / "metrics.jsonl"), fates) == "dropped"


def test_a_child_that_dies(tmp_path: Path, fates: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _in_child(monkeypatch, lambda: os._exit(3))
    assert _same(_rows_file(tmp_path / "run" / "metrics.jsonl"), fates) == "dropped"


def test_a_child_that_hangs(tmp_path: Path, fates: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forkgate, "WAIT_S", 0.5)
    _in_child(monkeypatch, lambda: time.sleep(60))
    t = time.monotonic()
    assert _same(_rows_file(tmp_path / "run" / "metrics.jsonl"), fates) == "dropped"
    assert time.monotonic() - t < 30  # (killed at its deadline, not waited for)


def test_no_process_left_when_the_parent_fails(tmp_path: Path, fates: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An interruption (Ctrl-C) during this process's part: the child is killed and reaped before it goes on."""
    def interrupted(self: TailSource) -> bool:
        raise KeyboardInterrupt

    pids = spy_forks(monkeypatch)
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    monkeypatch.setattr(TailSource, "poll", interrupted)
    with pytest.raises(KeyboardInterrupt):
        read_runs([str(path)], io.StringIO(), split=True)
    assert len(pids) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)  # reaped: no process left behind


SCRIPT = """\
import os, sys, time
from steptable.ingest import forkgate, splitread
splitread.MIN_BYTES = 0
forkgate.forkable = lambda: True
forkgate.free_cores = lambda: 2
real = splitread._pack
def pack(*args):
    if os.getpid() != parent:
        time.sleep(float(sys.argv[2]))  # (each chunk of the child's part)
    return real(*args)
splitread._pack = pack
parent = os.getpid()
print("started", flush=True)
from steptable.cli.main import main
sys.exit(main(["summary", sys.argv[1]]))
"""


def _summary(path: Path, child_sleep: float) -> subprocess.Popen[str]:
    """``summary`` of ``path`` in a session of its own, its read split, the child sleeping ``child_sleep`` s before
    each chunk it sends; returned once it has started."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(path), str(child_sleep)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "started\n"
    return proc


def test_ctrl_c_during_a_split_read(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group) while the child works: exit status 130, no traceback, no process of
    the group left."""
    proc = _summary(_rows_file(tmp_path / "run" / "metrics.jsonl"), child_sleep=60)
    try:
        time.sleep(1.5)  # (the child forked and asleep, the parent waiting for it)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        assert "Traceback" not in err
        time.sleep(0.2)
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)  # (no process of its group left)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        reap(proc)


def test_the_same_summary_text(tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    """``summary`` of a hostile run (keys changing at the cut, a resume after it, non-finite cells, a spike) and of
    a directory of runs: the same text, its alert workers as they are."""
    def edit(i: int, c: int) -> Any:
        if i == c + 200:
            return {**_row(i), "loss": 50.0}
        if i % 97 == 0:
            return _nonfinite(i)
        return _row(i - 400) if i >= c + 600 else {**_row(i), "eval/score": 0.5} if i >= c else None

    for path in (_rows_file(tmp_path / "a" / "metrics.jsonl", edit), _rows_file(tmp_path / "b" / "metrics.jsonl")):
        age(path, 3 * 86400)  # (its age in whole days: the same in every text however long the tests take)
    one = {p: run_cli(["summary", str(p)], capsys) for p in (tmp_path / "a", tmp_path)}
    monkeypatch.setattr(splitread, "MIN_BYTES", 0)
    monkeypatch.setattr(forkgate, "forkable", lambda: True)
    monkeypatch.setattr(forkgate, "free_cores", lambda: 2)
    forks = spy_forks(monkeypatch)
    for p, want in one.items():
        assert run_cli(["summary", str(p)], capsys) == want
    assert len(forks) >= 3  # (a split read of each run at least: not one process against itself)
    assert "resumed" in one[tmp_path / "a"][1] and "spike" in one[tmp_path / "a"][1]


def test_when_a_read_is_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a first read, of a JSONL of at least MIN_BYTES, where forking is safe and a second core is free."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    forks = spy_forks(monkeypatch)
    monkeypatch.setattr(forkgate, "forkable", lambda: True)
    monkeypatch.setattr(forkgate, "free_cores", lambda: 2)
    monkeypatch.setattr(splitread, "MIN_BYTES", path.stat().st_size + 1)
    read_runs([str(path)], io.StringIO(), split=True)
    assert not forks  # too small
    monkeypatch.setattr(splitread, "MIN_BYTES", 0)
    read_runs([str(path)], io.StringIO(), split=False)
    assert not forks  # not asked (tail, watch: a follower)
    monkeypatch.setattr(forkgate, "free_cores", lambda: 1)
    read_runs([str(path)], io.StringIO(), split=True)
    assert not forks  # no free core
    monkeypatch.setattr(forkgate, "free_cores", lambda: 2)
    monkeypatch.setattr(forkgate, "forkable", lambda: False)
    read_runs([str(path)], io.StringIO(), split=True)
    assert not forks  # another thread (the MCP server's)
    monkeypatch.setattr(forkgate, "forkable", lambda: True)
    small = _rows_file(tmp_path / "small" / "metrics.jsonl", rows=800)
    read_runs([str(small)], io.StringIO(), split=True)
    assert not forks  # too few blocks to cut
    follower, _ = read_runs([str(path)], io.StringIO(), split=True)
    assert len(forks) == 1
    src = next(iter(follower._sources.values()))
    with open(path, "ab") as f:
        f.write(b"".join(_line(_row(ROWS + i)) for i in range(5000)))
    follower.scan()
    assert len(forks) == 1  # (a file read before is read on in this process)
    assert len(follower.stores["metrics.jsonl"]) == ROWS + 5000 and src.tail.offset == path.stat().st_size


def test_the_gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(forkgate, "LOADAVG", str(loadavg))
    loadavg.write_text("2.48 2.09 1.61 1/91 14359\n")  # (this process alone runnable)
    assert forkgate.free_cores() == 4
    loadavg.write_text("2.48 2.09 1.61 4/91 14359\n")
    assert forkgate.free_cores() == 1
    loadavg.write_text("2.48 2.09 1.61 9/91 14359\n")
    assert forkgate.free_cores() == 1
    loadavg.write_text("garbled")
    assert forkgate.free_cores() == 4
    start = time.monotonic()
    assert forkgate.deadline(start) - time.monotonic() == pytest.approx(forkgate.WAIT_S, abs=1)
    assert forkgate.deadline(start - 100) - time.monotonic() == pytest.approx(300, abs=1)


def test_no_split_beside_another_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP server runs commands in threads: a fork there could copy a lock another thread holds; the read stays
    in one process (the real gate: no thread count faked)."""
    import threading

    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    monkeypatch.setattr(splitread, "MIN_BYTES", 0)
    monkeypatch.setattr(forkgate, "free_cores", lambda: 2)
    forks = spy_forks(monkeypatch)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not forkgate.forkable()
        _, stores = read_runs([str(path)], io.StringIO(), split=True)
    finally:
        stop.set()
        other.join()
    assert not forks and len(stores[0]) == ROWS


def test_too_many_keys_after_the_cut(tmp_path: Path, fates: list[str]) -> None:
    """A key of its own on every row after the cut: the store stops taking new keys in the child's part, and says
    so once, to the reader's errors too, as a read in one process does."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl", lambda i, c: {**_row(i), f"k{i}": 0.5} if i > c else None)
    assert _same(path, fates) == "taken"
    assert any("keys" in line for line in read_runs([str(path)], io.StringIO())[0].errors)


def test_a_bug_on_one_of_the_childs_chunks_costs_that_chunk(tmp_path: Path, fates: list[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug of ours adding one chunk (steptable.ingest.files.follow: it costs that chunk, not the rest of the
    file): the chunks after it are read all the same, as in one process."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    add = TailSource._add
    marker = _cut_line() + 2000

    def buggy(self: TailSource, store: Any, parsed: Any, now: Any) -> None:
        if marker in parsed.steps:
            raise KeyError("store bug")
        add(self, store, parsed, now)

    monkeypatch.setattr(TailSource, "_add", buggy)
    assert _same(path, fates) == "taken"
    _, stores = read_runs([str(path)], io.StringIO(), split=True)
    assert ROWS - 1 in stores[0].steps and marker not in stores[0].steps


def test_the_child_ends_with_its_parent(tmp_path: Path) -> None:
    """``kill`` (SIGTERM) of ``summary`` alone, while the child parses its part: the child stops at its next chunk
    instead of parsing on for a parent that is gone."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl", rows=40_000)  # (the child's part: ~25 chunks)
    proc = _summary(path, child_sleep=0.5)
    try:
        time.sleep(1.5)  # (the child forked and in its part)
        proc.terminate()
        proc.wait(timeout=30)
        end = time.monotonic() + 5  # (well under the ~12 s the child's part takes)
        while time.monotonic() < end:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)  # (no process of its group left)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        reap(proc)


def test_a_partial_last_line_finished_after_the_childs_end(tmp_path: Path, fates: list[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's part ends in a line without its newline yet; its writer then ends that line and appends more
    rows (a live run) before the chunks are taken: the line is read whole, as a read in one process of the file as
    it ends."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    grown = _rows_file(tmp_path / "grown" / "metrics.jsonl", rows=ROWS + 400)
    serial = _read(grown, split=False)
    with open(path, "ab") as f:
        f.write(grown.read_bytes()[path.stat().st_size:][:WIDTH // 2])  # (half of the next line)

    _after_the_child(monkeypatch, _growing(path, grown))
    got = _read(path, split=True)
    assert fates == ["taken", "read on"]
    _same_run(got, serial)


def test_no_shared_memory(tmp_path: Path, fates: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """No memory to share (strict overcommit: mmap fails): the file is read in one process, no child forked."""
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OSError(12, "Cannot allocate memory")

    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    one = _read(path, split=False)
    forks = spy_forks(monkeypatch)
    monkeypatch.setattr(mmap, "mmap", refused)
    assert _read(path, split=True) == one
    assert not forks and not fates


def test_an_interruption_while_the_childs_numbers_are_added(tmp_path: Path, fates: list[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the child's chunks are being added (a view of the shared memory alive): the interruption
    itself comes out (no BufferError in its place), and no process is left."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    pids = spy_forks(monkeypatch)

    def interrupted(self: TailSource, parts: Any) -> bool:
        next(iter(parts))
        raise KeyboardInterrupt

    monkeypatch.setattr(TailSource, "carry_on", interrupted)
    with pytest.raises(KeyboardInterrupt) as info:
        read_runs([str(path)], io.StringIO(), split=True)
    assert info.value.__context__ is None
    del info
    assert len(pids) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], os.WNOHANG)


def test_an_interruption_holding_a_view_of_the_shared_memory(tmp_path: Path, fates: list[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a slice of the shared memory is alive in a frame its traceback keeps (the memory cannot be
    closed then): the interruption comes out, and the memory is freed with the traceback."""
    path = _rows_file(tmp_path / "run" / "metrics.jsonl")
    real = splitread._unpack
    held: list[Any] = []

    def unpack(packed: Any, raw: memoryview) -> Any:
        part = raw[:8]  # (alive in this frame when the interruption leaves it)
        held.append(weakref.ref(raw.obj))
        if len(held) == 2:
            raise KeyboardInterrupt
        del part
        return real(packed, raw)

    monkeypatch.setattr(splitread, "_unpack", unpack)
    with pytest.raises(KeyboardInterrupt) as info:
        read_runs([str(path)], io.StringIO(), split=True)
    assert info.value.__context__ is None
    memory = held[0]()
    assert memory is not None and not memory.closed  # (kept open by the slice in the traceback's frame)
    del memory
    del info
    gc.collect()
    assert held[0]() is None


NUMBERS: dict[str, tuple[Callable[[int, int], Any], str]] = {
    "an int column that turns float after the cut": (lambda i, c: {**_row(i), "n": i if i < c + 5 else i + 0.5},
                                                     "taken"),
    "a float column with whole numbers after the cut": (lambda i, c: {**_row(i), "x": 1.5 if i < c else float(i)},
                                                        "taken"),
    "int64's edges about the cut": (lambda i, c: {**_row(i), "e": 2**63 - 1 if i % 2 else -2**63}
                                    if c - 3 < i < c + 3 else {**_row(i), "e": i}, "taken"),
    "past int64 just after the cut": (lambda i, c: {**_row(i), "e": 2**63 if i == c + 1 else -2**63 - 1
                                                    if i == c + 2 else i}, "taken"),
    # (a step written 5.0 is read the tolerant way: no child's chunks)
    "steps written as floats": (lambda i, c: {**_row(i), "step": float(i)}, "dropped"),
    "steps past 2**53 and a column of them": (lambda i, c: {**_row(i), "step": 2**60 + i, "tokens": 2**60 + i},
                                              "taken"),
    "bools and nulls in an int column after the cut": (lambda i, c: {**_row(i), "n": True if i == c + 4 else None
                                                                     if i == c + 6 else i}, "taken"),
}


@pytest.mark.parametrize("name", list(NUMBERS))
def test_numbers_read_the_same_about_the_cut(name: str, tmp_path: Path, fates: list[str]) -> None:
    """Numbers the child packs as raw doubles and int64s (or leaves as they are: past int64, bools, nulls) about
    the cut, the steps column shared with a column: the same cells and types as one process reads."""
    edit, fate = NUMBERS[name]
    assert _same(_rows_file(tmp_path / "run" / "metrics.jsonl", edit), fates) == fate
