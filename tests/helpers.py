"""Plain helpers every test folder uses: files of rows, the command run in-process or followed, goldens."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str) -> None:
    """Compare ``text`` with tests/golden/<name>; STEPTABLE_UPDATE_GOLDEN=1 rewrites the file instead."""
    path = GOLDEN / name
    if os.environ.get("STEPTABLE_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"golden file {path} missing; run with STEPTABLE_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"output differs from {path}"


@contextlib.contextmanager
def following(path: Path) -> Iterator[tuple[list[int], Callable[[int], None]]]:
    """``steptable tail -f --format jsonl path`` in a subprocess: (steps printed so far, wait until n of them)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "steptable", "tail", "-f", "--poll", "0.1", "--format", "jsonl", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert proc.stdout is not None
    out = proc.stdout
    seen: list[int] = []
    # (rows only: an object that says rows were lost has no step)
    threading.Thread(target=lambda: seen.extend(r["step"] for r in map(json.loads, out) if "step" in r),
                     daemon=True).start()
    deadline = time.time() + 20

    def wait(n: int) -> None:
        while len(seen) < n and time.time() < deadline:
            time.sleep(0.05)

    try:
        yield seen, wait
    finally:
        reap(proc)


def reap(proc: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """End ``proc`` whatever state it is in: TERM, ``grace`` seconds, then KILL (a test that fails or times out
    must never leave a follower spinning)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def readline_within(stream: Any, seconds: float) -> str | bytes | None:
    """One line of ``stream`` (a subprocess's pipe), or None when none came within ``seconds``."""
    got: list[str | bytes] = []
    t = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    t.start()
    t.join(seconds)
    return got[0] if got else None


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``steptable <argv>`` in this process: (exit status, stdout, stderr)."""
    from steptable.cli.main import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def write(path: Path, text: str) -> Path:
    """``text`` (dedented) to ``path``, its directory made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def write_rows(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Append ``rows`` to a JSONL file (made with its directory if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def spy_whole_copies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every call of RunStore's whole-history accessors (steps, wall_times, column, cells): a reader of new
    rows must make none."""
    from steptable.ingest import RunStore

    whole: list[str] = []
    for name in ("steps", "wall_times"):
        prop = getattr(RunStore, name)
        monkeypatch.setattr(RunStore, name, property(lambda s, n=name, p=prop: (whole.append(n), p.fget(s))[1]))
    for name in ("column", "cells"):
        meth = getattr(RunStore, name)
        monkeypatch.setattr(RunStore, name, lambda s, k, n=name, m=meth: (whole.append(n), m(s, k))[1])
    return whole


def repoint(link: Path, target: Path, gone: Path) -> None:
    """``link`` made to lead to ``target`` and ``gone`` deleted: the next launch's ``run_dir=latest`` re-pointed at
    its own run, the old run cleaned up."""
    link.unlink()
    link.symlink_to(target)
    shutil.rmtree(gone)


def store_of(path: Path, rows: Iterable[Mapping[str, Any]]) -> Any:
    """The RunStore a Follower reads from ``rows`` written to ``path`` (with the alerts of rows a resume replaced)."""
    from steptable.alerts.replaced import read_replaced
    from steptable.ingest import Follower

    write_rows(path, rows)
    f = Follower([path.parent], on_resume=read_replaced)
    f.scan()
    (store,) = f.stores.values()
    return store


def grpo_row(rng: Any, step: int) -> dict[str, Any]:
    """One healthy GRPO row: noisy loss, grad norm and reward."""
    return {"step": step, "loss": 0.02 + rng.gauss(0, 0.01), "grad_norm": 0.4 + abs(rng.gauss(0, 0.05)),
            "reward": 0.55 + rng.gauss(0, 0.05)}


def grpo_rows(steps: range, seed: int = 0, step_key: str = "step") -> list[dict[str, Any]]:
    """GRPO rows of ``steps`` (seeded): a loss falling and a reward rising slowly, noisy kl and grad norm."""
    rng = random.Random(seed)
    return [{step_key: s, "loss": 0.8 - 0.001 * s + rng.gauss(0, 0.03), "reward": 0.2 + 0.002 * s + rng.gauss(0, 0.05),
             "kl": abs(rng.gauss(0.01, 0.003)), "grad_norm": abs(rng.gauss(1.0, 0.2))} for s in steps]


def printed_steps(out: str) -> list[int]:
    """The steps of JSONL text (``tail --format jsonl`` output), in order."""
    return [json.loads(line)["step"] for line in out.splitlines()]


def plain_run(root: Path, **extra: float) -> Path:
    path = root / "metrics.jsonl"
    write_rows(path, [{"step": s, "actor/loss": 1 / (s + 1), **extra} for s in range(4)])
    return path


def age(path: Path, seconds: float) -> None:
    """``path`` last written ``seconds`` ago (its mtime)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


#: an mtime long past, the same in every process: a summary then says when its runs were written ("idle since" a
#: date), not how long ago (two runs of one command a second apart said "upd 0s ago" and "upd 1s ago")
LONG_AGO = 1_700_000_000.0


def written_long_ago(*paths: Path) -> None:
    """``paths`` last written at ``LONG_AGO`` (their mtime)."""
    for path in paths:
        os.utime(path, (LONG_AGO, LONG_AGO))


def spy_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids forked from this process from now on (``os.fork`` spied on), in order."""
    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids
