"""steptable.logger.rank: which distributed rank a process is (environment, torch.distributed once it is up),
asked once it is known, and rank 0 alone writing rows."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
from loguru import logger

import steptable.logger.rank as st_rank
from steptable import StepLogger, setup_logging
from steptable.logger.rank import _RANK_VARS
from tests.logger.helpers import LOSS_COLS, jsonl_rows


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
    """mp.spawn sets no RANK, and the logger is made before init_process_group: rank 0 alone prints and writes
    metrics.jsonl (the rows of ranks 0 and 1 interleaved would make summary read rank 1's last value)."""
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
    """End to end: torch.multiprocessing.spawn, gloo, the logger made before the group: rank 0's rows only."""
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


def test_a_rank_learnt_after_setup_moves_the_console_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """torch.multiprocessing.spawn with setup_logging before init_process_group: once a worker learns its rank,
    its console and file follow (not rank 0's file name and INFO lines for every worker)."""
    group: list[int | None] = [None]  # no process group yet, and no launcher's variable
    monkeypatch.setattr(st_rank, "known_rank", lambda: group[0])
    monkeypatch.setattr(st_rank, "dist_rank", lambda: group[0])
    path = setup_logging("spawned", log_dir=tmp_path, colour=False)
    logger.info("before init")
    group[0] = 1  # init_process_group
    logger.info("rank one's row")
    logger.warning("rank one's warning")
    out = capsys.readouterr().out
    assert out == "I before init\nW [r1] rank one's warning\n"
    ranked = path.with_name(path.stem + ".rank1.log")
    assert "before init" in path.read_text() and "rank one" not in path.read_text()
    assert "rank one's row" in ranked.read_text() and "rank one's warning" in ranked.read_text()


def test_a_known_rank_is_not_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every message re-read four environment variables, twice, for ever in a single-process run (11% of log())."""
    asked: list[int] = []
    monkeypatch.setenv("RANK", "0")
    rank = st_rank.LazyRank()
    monkeypatch.setattr(st_rank, "dist_rank", lambda: asked.append(1))  # (the messages' asking, from here)
    assert [rank() for _ in range(5)] == [0] * 5 and asked == []
    monkeypatch.undo()  # (RANK and dist_rank as they were)
    monkeypatch.delenv("RANK", raising=False)
    rank = st_rank.LazyRank()  # nothing says it yet (spawn, before init_process_group): asked at each message
    monkeypatch.setattr(st_rank, "dist_rank", lambda: asked.append(1))
    assert [rank() for _ in range(3)] == [0] * 3 and len(asked) == 3


def test_a_rank_only_a_launchers_variable_gives_is_said_once_on_stderr(
        tmp_path: Path, fake_dist: _FakeDist, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``srun -n4 python train.py --seed $SLURM_PROCID`` (four independent seeds): three of them are rank 1-3 by
    SLURM_PROCID and wrote nothing, silently. Once a logger, stderr says so and how to write; a process group's
    rank, or one the caller gives, says nothing (a distributed run's other ranks are meant to be quiet)."""
    monkeypatch.setenv("SLURM_PROCID", "2")
    sl = StepLogger(LOSS_COLS, run_dir=tmp_path / "seed2", alerts=False)
    assert [sl.log({"step": s, "loss": 0.5}) for s in range(3)] == [None] * 3
    sl.close()
    err = capsys.readouterr().err
    assert err.count("this process is rank 2 (SLURM_PROCID=2)") == 1 and "StepLogger(rank=0)" in err, err
    assert not (tmp_path / "seed2").exists()
    fake_dist.rank = 3  # a process group says it
    StepLogger(LOSS_COLS, run_dir=tmp_path / "ddp", alerts=False).log({"step": 0, "loss": 0.5})
    StepLogger(LOSS_COLS, run_dir=tmp_path / "given", rank=1, alerts=False).log({"step": 0, "loss": 0.5})
    assert "rank" not in capsys.readouterr().err
