"""Stores and files for the ingest tests: rows added to a RunStore, lines of a JSONL, the one store a
Follower holds, a clock the Follower reads, and the numbers rule's examples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import steptable.ingest.files.follow as follow_mod
from steptable.alerts.replaced import read_replaced
from steptable.ingest import Follower, RunStore
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.jsonl import JsonlParser
from tests.library_logs import write_trainer_state


def followed(root: Path) -> tuple[Follower, RunStore]:
    """A Follower of ``root`` (with the replaced rows' alerts) after one scan, and the one store it holds."""
    fol = Follower([root], on_resume=read_replaced)
    fol.scan()
    (store,) = fol.stores.values()
    return fol, store


class FollowerClock:
    """A monotonic clock the test moves (``t``), for the Follower's grace on files that are gone."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


def timed_rows(start: int, stop: int, loss: float = 1.0) -> list[dict[str, Any]]:
    """Rows of steps ``start``..``stop - 1``, each with its own clock (``ts``)."""
    return [{"step": s, "loss": loss, "ts": 1.7e9 + s} for s in range(start, stop)]


def polls_until_gone(f: Follower, follower_clock: FollowerClock, run: str) -> set[str]:
    """Poll as an idle follower does until ``run`` leaves ``stores``, for at most twice the grace; the runs that
    changed meanwhile."""
    changed: set[str] = set()
    for _ in range(200):
        changed |= f.scan()
        if run not in f.stores:
            break
        follower_clock.t += follow_mod.GONE_AFTER / 100
    return changed


def add_untimed(store: RunStore, rows: list[dict[str, Any]]) -> None:
    """``rows`` added to ``store`` as one batch of rows already in the file (no arrival time)."""
    store.add(Parsed(steps=[r["step"] for r in rows], rows=rows, step_key="step"), now=math.nan)


def loss_line(step: int) -> bytes:
    """One JSONL line: ``step`` and a loss of step + .5."""
    return (json.dumps({"step": step, "loss": step + 0.5}) + "\n").encode()


def rew_rows(start: int, stop: int) -> list[dict[str, Any]]:
    """Rows of steps ``start``..``stop - 1`` with a reward of step / 100."""
    return [{"step": s, "rew": s / 100} for s in range(start, stop)]


def follower_store(fo: Follower) -> RunStore:
    """The one store ``fo`` holds."""
    (store,) = fo.stores.values()
    return store


def check_steps(store: RunStore, want: list[int]) -> None:
    """The step column shows the step index, for every row; no ``step`` key is stored beside the file's own."""
    assert list(store.steps) == want
    assert "step" not in store.keys
    assert list(store.column("step")) == [float(s) for s in want]
    assert store.cells("step") == want
    assert [r["step"] for r in store.rows()] == want
    assert all(store.value(i, "step") == s for i, s in enumerate(want))


#: CSV cells that are numbers, and the number each is
NUMBERS = {"0": 0, "-1": -1, "+7": 7, "0.5": 0.5, "-0.25": -0.25, ".5": 0.5, "2.": 2.0, "1e-05": 1e-05,
           "1E+3": 1000.0, "0.8888888990000001": 0.8888888990000001, " 2.5 ": 2.5, "\t3\n": 3, "0e0": 0.0}


#: CSV cells that are text, though a looser rule would read them as numbers
NOT_NUMBERS = ["0012", "007", "00", "00.5", "0x10", "1_000", "1,000", "1e", "e5", ".", "+", "", " ", "1 2", "+-1",
               "\u0661\u0662", "\uff11", "v1", "1.2.3", "0b1", "1e5x", "inf5"]


def train_line(step: int) -> bytes:
    """One JSONL line: ``step``, a loss of step + .5 and a text cell."""
    return (json.dumps({"step": step, "loss": step + 0.5, "phase": "train"}) + "\n").encode()


def assert_rows(store: RunStore, expected_steps: list[int]) -> None:
    """``store`` holds exactly ``expected_steps``, each with the loss :func:`train_line` wrote."""
    assert list(store.steps) == expected_steps
    for i, s in enumerate(expected_steps):
        assert store.value(i, "loss") == s + 0.5


def write_jsonl(path: Path, rows: list[dict[str, Any]], dumps: Any = json.dumps) -> None:
    """``path`` (made with its directory) holding ``rows``, one ``dumps(row)`` a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(dumps(r) + "\n" for r in rows))


def only(stores: dict[str, RunStore]) -> RunStore:
    """The one store of ``stores``."""
    assert len(stores) == 1, list(stores)
    return next(iter(stores.values()))


def feed_chunks(chunks: list[bytes]) -> tuple[RunStore, JsonlParser]:
    """A store fed ``chunks`` of JSONL through one JsonlParser, and the parser."""
    store = RunStore("r", "r.jsonl")
    parser = JsonlParser("r.jsonl")
    lineno = 1
    for c in chunks:
        store.add(parser.parse(c, lineno))
        lineno += c.count(b"\n")
    return store, parser


def add_rows(store: RunStore, rows: list[dict[str, Any]], step_key: str = "step") -> None:
    """``rows`` added to ``store`` as one batch that arrived at time 1000."""
    store.add(Parsed(steps=[r[step_key] for r in rows], rows=rows, step_key=step_key), now=1000.0)


def trainer_state(path: Path, steps: int, nan: bool = True) -> None:
    """An HF Trainer state file of ``steps`` logged steps (a NaN grad norm at step 2, an evaluation every 2nd), written
    by transformers' own ``TrainerState.save_to_json``."""
    history: list[dict[str, Any]] = []
    for s in range(1, steps + 1):
        history.append({"loss": 1.0 / s, "grad_norm": float("nan") if nan and s == 2 else 0.5,
                        "learning_rate": 1e-5, "epoch": s / 10, "step": s})
        if s % 2 == 0:
            history.append({"eval_loss": 0.9, "eval_runtime": 1.0, "epoch": s / 10, "step": s})
    write_trainer_state(path, history, steps, epoch=steps / 10)
