from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

GOLDEN = Path(__file__).parent / "golden"

# Property tests check values, not speed: on a loaded 2-core CI machine one slow draw (a GC pause, another process)
# failed a run with "input generation is slow" though every example passed.
settings.register_profile("steptable", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("steptable")


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


@pytest.fixture(scope="module")
def one_torch_thread():  # type: ignore[no-untyped-def]
    """Small tensors on a shared 2-core machine: intra-op threads only add OpenMP contention (restored after).
    torch is imported here, not at the top: most test modules never need it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def golden():  # type: ignore[no-untyped-def]
    return check_golden


@pytest.fixture
def captured():  # type: ignore[no-untyped-def]
    """Route loguru to a list for the test (setup_logging is tested separately)."""
    from loguru import logger

    from steptable.logger.setup import ICONS

    lines: list[str] = []
    # The icon from steptable's table, not {level.icon}: loguru's own icons stay until setup_logging runs, so the
    # lines would depend on which test ran before.
    hid = logger.add(lambda m: lines.append(str(m)), format=lambda r: ICONS.get(r["level"].name, "?") + " {message}\n",
                     level="DEBUG")
    yield lines
    logger.remove(hid)


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
    threading.Thread(target=lambda: seen.extend(json.loads(x)["step"] for x in out), daemon=True).start()
    deadline = time.time() + 20

    def wait(n: int) -> None:
        while len(seen) < n and time.time() < deadline:
            time.sleep(0.05)

    try:
        yield seen, wait
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``steptable <argv>`` in this process: (exit status, stdout, stderr)."""
    from steptable.cli.main import main

    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The user's schema directory, empty and private to the test (XDG_CONFIG_HOME under tmp_path)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "steptable" / "schemas"


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


@dataclass
class FakeRun:
    """A run as a summary reads it (steptable.summary.keycols.RunLike), from plain columns."""

    run: str
    arm: str
    cols: dict[str, list[Any]]
    steps: list[int]
    resumes: list[int] = field(default_factory=list)
    bad_count: int = 0
    last_update: float | None = None
    wall_times: list[float] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return list(self.cols)

    def column(self, key: str) -> Sequence[Any]:
        return self.cols.get(key, [math.nan] * len(self.steps))

    def __len__(self) -> int:
        return len(self.steps)


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
