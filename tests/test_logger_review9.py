"""StepLogger in real loops (ninth review): one-element tensors and arrays (an all-reduced loss), a rank that is known
only once the process group is made (torch.multiprocessing.spawn), a second Ctrl-C while close() marks the run
ended, and a JSONL deleted during the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from steptable import StepLogger
from steptable.logger.rank import _RANK_VARS
from steptable.table import runinfo
from tests.helpers import run_cli
from tests.logger.helpers import ARRAY_MAKERS, LOSS_COLS, description, jsonl_rows


@pytest.mark.parametrize("make", ARRAY_MAKERS)
@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_a_one_element_array_is_its_number_in_the_row_and_the_jsonl(
    tmp_path: Path, make: Callable[[float, tuple[int, ...]], Any], shape: tuple[int, ...]
) -> None:
    """``t = torch.tensor([loss]); dist.all_reduce(t)``: the row showed ``[.731`` and the JSONL held [0.731]."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    line = sl.log({"step": 0, "loss": make(0.75, shape), "extra": make(2.5, shape)})
    sl.close()
    assert line is not None and line.split() == ["0", ".75"]
    row = jsonl_rows(tmp_path)[0]
    assert row["loss"] == 0.75 and row["extra"] == 2.5


@pytest.mark.parametrize("make", ARRAY_MAKERS)
def test_a_nan_in_a_one_element_loss_raises_the_alert_in_the_loop_and_in_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], captured: list[str],
    make: Callable[[float, tuple[int, ...]], Any],
) -> None:
    """[nan] was text to the alerts and a list in the file: a NaN loss raised no alert, here or in ``tail``."""
    with StepLogger(LOSS_COLS, run_dir=tmp_path, console=True) as sl:
        for step in range(12):
            sl.log({"step": step, "loss": make(float("nan") if step == 10 else 1.0 / (step + 1), (1,))})
    assert any(line.startswith("E ") and "loss non-finite (nan)" in line for line in captured)
    assert jsonl_rows(tmp_path)[10]["loss"] is None
    _, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert "step 10 loss non-finite (nan)" in out


# ------------------------------------------------------------------------------------ rank known only later
class _FakeDist:
    """torch.distributed as a trainer sees it: imported, its process group made later (or never)."""

    def __init__(self) -> None:
        self.rank: int | None = None
        self.asked = 0

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        self.asked += 1
        return self.rank is not None

    def get_rank(self) -> int:
        assert self.rank is not None
        return self.rank


@pytest.fixture
def fake_dist(monkeypatch: pytest.MonkeyPatch) -> _FakeDist:
    for var in _RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    dist = _FakeDist()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(distributed=dist))
    return dist


@pytest.mark.parametrize("rank", [0, 1])
def test_a_logger_made_before_init_process_group_writes_on_rank_0_only(
    tmp_path: Path, fake_dist: _FakeDist, rank: int
) -> None:
    """mp.spawn sets no RANK, and the logger was made before init_process_group: every rank printed and wrote
    metrics.jsonl (the rows of rank 0 and 1 interleaved; summary read rank 1's last value)."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    fake_dist.rank = rank
    written = [sl.log({"step": s, "loss": 0.5}) for s in range(3)]
    sl.close()
    assert sl.rank == rank
    if rank:
        assert written == [None] * 3 and not any(tmp_path.iterdir())
    else:
        assert None not in written and len(jsonl_rows(tmp_path)) == 3 and (tmp_path / "table.txt").exists()


def test_a_rank_once_known_is_not_asked_again_and_a_given_rank_never(tmp_path: Path, fake_dist: _FakeDist) -> None:
    sl = StepLogger(LOSS_COLS, console=False, alerts=False)
    fake_dist.rank = 0
    sl.log({"step": 0, "loss": 0.5})
    asked = fake_dist.asked
    sl.log({"step": 1, "loss": 0.5})
    assert fake_dist.asked == asked
    fake_dist.rank = 1  # (a rank given by the caller wins over torch.distributed's)
    given = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False, rank=0)
    assert given.log({"step": 0, "loss": 0.5}) is not None and given.is_writer


def test_a_spawned_pair_of_ranks_writes_rank_0s_rows_only(tmp_path: Path) -> None:
    """The reviewer's case end to end: torch.multiprocessing.spawn, gloo, the logger made before the group."""
    pytest.importorskip("torch.distributed")
    script = tmp_path / "spawned.py"
    script.write_text(textwrap.dedent(f"""
        import torch, torch.distributed as dist, torch.multiprocessing as mp
        from steptable import StepLogger, Col

        def worker(rank):
            torch.set_num_threads(1)
            sl = StepLogger([Col("step", 5, "step", "d")], run_dir={str(tmp_path / "run")!r}, alerts=False)
            dist.init_process_group("gloo", init_method={"file://" + str(tmp_path / "init")!r}, rank=rank,
                                    world_size=2)
            for s in range(3):
                sl.log({{"step": s, "r": rank}})
            sl.close()
            dist.destroy_process_group()

        if __name__ == "__main__":
            mp.spawn(worker, nprocs=2)
    """))
    env = {k: v for k, v in os.environ.items() if k not in _RANK_VARS}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [r["r"] for r in jsonl_rows(tmp_path / "run")] == [0, 0, 0]
    assert (done.stdout + done.stderr).count("end of run") == 1


# ------------------------------------------------------------------------------------ a second Ctrl-C in close()
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
    """Interrupted inside runinfo.write (right after mkstemp made its file, or at the rename): steptable.json kept no
    "closed" (the run read as stalled for ever) and a stray .tmp stayed beside it."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    fired = _interrupt_once(monkeypatch, name, _is_description, after)
    with pytest.raises(KeyboardInterrupt):
        sl.close()
    assert fired
    assert runinfo.closed_at(description(tmp_path)) is not None and description(tmp_path)["rows"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.jsonl", runinfo.NAME]  # (no table: interrupted)


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
    """The second SIGINT landed as __exit__ entered close(): none of its steps ran and the run read as stalled."""
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path, console=False, alerts=False)
    sl.log({"step": 0, "loss": 0.5})
    sl._lock = _LockInterruptedOnce(sl._lock)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        sl.close()
    assert runinfo.closed_at(description(tmp_path)) is not None


# ------------------------------------------------------------------------------------ the JSONL deleted mid-run
@pytest.mark.parametrize("what", ["file", "directory"])
def test_the_dump_says_the_table_misses_the_rows_of_a_deleted_jsonl(tmp_path: Path, what: str) -> None:
    """The dump said "all rows, every column: table.txt" though table.txt held the 3 rows after the deletion."""
    run = tmp_path / "run"
    sl = StepLogger(LOSS_COLS, run_dir=run, console=False, alerts=False)
    for step in range(6):
        if step == 3:
            (run / "metrics.jsonl").unlink() if what == "file" else shutil.rmtree(run)
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
