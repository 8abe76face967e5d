"""Two StepLogger processes writing one run directory and arm at once: the readers say "two writers" once, naming
the run, and show the second process's rows apart, instead of reading the interleaving as hundreds of resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from itertools import pairwise
from pathlib import Path

import pytest

from steptable.alerts.replaced import read_replaced
from steptable.ingest import Follower
from steptable.table.runinfo import WRITER_KEY
from tests.helpers import reap, run_cli

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock")

ROOT = Path(__file__).resolve().parents[2]
STEPS = 150

WRITER = textwrap.dedent("""
    import sys, time
    from steptable.logger.steplogger import StepLogger
    log = StepLogger(None, run_dir=sys.argv[1], console=False)
    start = time.time() + float(sys.argv[2])
    while time.time() < start:  # (both processes begin together: their rows interleave)
        time.sleep(0.001)
    for s in range(int(sys.argv[3])):
        log.log({"step": s, "loss": 1.0 / (s + 1)})
        time.sleep(0.002)
    log.close()
""")


@pytest.fixture(scope="module")
def two_writers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A run directory two live StepLoggers wrote at once (steps 0..STEPS-1 each); the second's pid."""
    run = tmp_path_factory.mktemp("two") / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(run), "3", str(STEPS)], cwd=ROOT, env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        errs = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:
            reap(p)
    second = [p for p, e in zip(procs, errs, strict=True) if "writing this arm's rows" in e]
    assert len(second) == 1, errs
    return run, second[0].pid


def test_the_rows_interleave_and_the_second_writers_carry_its_pid(two_writers: tuple[Path, int]) -> None:
    run, pid = two_writers
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    marks = [r.get(WRITER_KEY) for r in rows]
    assert set(marks) == {None, pid} and marks.count(pid) == STEPS
    turns = sum(a != b for a, b in pairwise(marks))
    assert turns >= 10  # the two really wrote at once (the old readers saw a resume at each turn)


def test_readers_keep_each_writers_rows_in_order_without_resumes(two_writers: tuple[Path, int]) -> None:
    run, pid = two_writers
    f = Follower([run], on_resume=read_replaced)
    f.scan()
    first = next(k for k in f.stores if "~" not in k)
    assert sorted(f.stores) == [first, f"{first}~writer{pid}"]
    for store in f.stores.values():
        assert list(store.steps) == list(range(STEPS)) and store.resumes == []
    said = [e for e in f.errors if "two writers" in e]
    assert len(said) == 1 and f"process {pid}" in said[0] and said[0].endswith(f"shown apart as {first}~writer{pid}")
    assert said[0].startswith(str(run / "metrics.jsonl"))


def test_tail_says_two_writers_once_and_no_resume(two_writers: tuple[Path, int],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run, pid = two_writers
    rc, out, err = run_cli(["tail", "-n", "0", str(run)], capsys)
    assert rc == 0 and err.count("two writers") == 1 and f"process {pid}" in err
    assert "resumed" not in out + err and WRITER_KEY not in out


def test_summary_says_two_writers_in_the_runs_header_not_resumes(two_writers: tuple[Path, int],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    run, pid = two_writers
    rc, out, err = run_cli(["summary", str(run)], capsys)
    assert rc == 0, err
    assert f"two writers: process {pid} writes this arm too" in out and "resumed" not in out
