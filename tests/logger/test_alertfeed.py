"""The StepLogger's alerts fed in batches (steptable.logger.alertfeed): the same alerts as row by row, each said
within its batch's bound, a non-finite cell's at once, and the waiting rows' alerts said at close."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from steptable.alerts.engine import Alert, AlertConfig, AlertEngine
from steptable.logger import alertfeed
from steptable.logger.alertfeed import AlertFeed
from steptable.logger.steplogger import StepLogger
from steptable.table.columns import Col
from tests.logger.helpers import spike_said_at_exit

KEYS = ("loss", "grad_norm", "reward", "entropy", "kl", "completions/clipped_ratio")


def _noisy(n: int, level: float, rel: float, seed: int) -> list[Any]:
    rnd = random.Random(seed)
    return [round(level * (1 + rel * rnd.gauss(0, 1)), 6) for _ in range(n)]


def _rows(n: int = 1500, seed: int = 0) -> list[dict[str, Any]]:
    """GRPO-like rows with incidents and hostile cells: a loss spike, a NaN and an inf, a reward collapse, an entropy
    collapse, a saturated stretch, evaluation rows without the training keys, ints, a numeric string, a fraction, a
    bool, a key that is not watched."""
    cols = {k: _noisy(n, lv, rel, seed * 10 + i) for i, (k, lv, rel) in enumerate(
        [("loss", 0.5, 0.1), ("grad_norm", 1.0, 0.2), ("reward", 0.5, 0.1), ("entropy", 1.0, 0.05),
         ("kl", 0.05, 0.3), ("completions/clipped_ratio", 0.05, 0.3)])}
    cols["loss"][800] = 9.0
    cols["loss"][700] = math.nan
    cols["kl"][600] = math.inf
    cols["reward"][1000:1060] = [0.01] * 60
    cols["entropy"][300:400] = [0.05] * 100
    cols["completions/clipped_ratio"][1200:1230] = [0.95] * 30
    cols["reward"][450:470] = [random.Random(seed).randrange(0, 5) for _ in range(20)]
    cols["loss"][500] = "0.51"
    cols["completions/clipped_ratio"][520] = (1, 8)
    cols["completions/clipped_ratio"][540] = True
    rows = []
    for i in range(n):
        if i % 37 == 36:
            rows.append({"eval_loss": 0.6, "other": "x"})
        else:
            rows.append({"other": i, **{k: c[i] for k, c in cols.items()}})
    return rows


def _row_by_row(rows: list[dict[str, Any]], walls: list[float], config: AlertConfig | None = None) -> list[Alert]:
    eng = AlertEngine(config)
    return [a for i, r in enumerate(rows) for a in eng.update(i, r, walls[i])]


def _batched(rows: list[dict[str, Any]], walls: list[float], batch: int,
             config: AlertConfig | None = None) -> list[tuple[int, Alert]]:
    """(the row at which each alert was said, the alert); the last ones at the drain (row len(rows))."""
    feed = AlertFeed(AlertEngine(config), rows=batch, seconds=math.inf)
    out = [(i, a) for i, r in enumerate(rows) for a in feed.add(i, r, walls[i])]
    return out + [(len(rows), a) for a in feed.drain()]


@pytest.mark.parametrize("batch", [1, 10, 64, 250])
@pytest.mark.parametrize("seed", [0, 1])
def test_batches_give_the_alerts_of_row_by_row_each_within_its_bound(batch: int, seed: int) -> None:
    rows = _rows(seed=seed)
    walls = [1000.0 + 0.012 * i for i in range(len(rows))]
    walls[900:] = [w + 600 for w in walls[900:]]  # (a clock gap: the bulk path leaves that batch to the rows)
    for config in (None, AlertConfig(nan_missing=True)):
        want = _row_by_row(rows, walls, config)
        got = _batched(rows, walls, batch, config)
        assert [a for _, a in got] == want
        assert len(want) >= 5  # (the incidents are said: not a comparison of empty lists)
        for said, a in got:
            assert a.step <= said < a.step + batch or said == len(rows)
            if a.kind == "nonfinite":
                assert said == a.step  # never late


def test_a_batch_is_fed_when_its_first_row_waited_the_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(alertfeed, "monotonic", lambda: now[0])
    feed = AlertFeed(AlertEngine(), rows=1000, seconds=2.0)
    feed.add(-1, {"loss": 0.5}, 999.0)  # (the run's first row: no row before it to wait with, fed at once)
    assert feed.waiting == 0
    for i in range(30):
        assert feed.add(i, {"loss": 0.5}, 1000.0 + i) == [] and feed.waiting == i + 1
    now[0] = 1.9
    feed.add(30, {"loss": 0.5}, 1030.0)
    assert feed.waiting == 31
    now[0] = 2.0
    feed.add(31, {"loss": 0.5}, 1031.0)
    assert feed.waiting == 0


def test_the_waiting_rows_alerts_are_said_before_the_run_ends(captured: list[str]) -> None:
    """A spike in the last rows of a run shorter than a batch is said at close, before the end-of-run line."""
    sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f")])
    rnd = random.Random(3)
    for step in range(50):
        sl.log({"step": step, "loss": 9.0 if step == 45 else 0.5 + rnd.gauss(0, 0.01)})
    assert not any(line.startswith("W step 45") for line in captured)  # (its batch is still waiting)
    sl.close()
    said = [i for i, line in enumerate(captured) if line.startswith("W step 45 loss")]
    end = [i for i, line in enumerate(captured) if "end of run" in line]
    assert len(said) == 1 and end and said[0] < end[0]


def test_a_failing_last_batch_is_reported_and_the_run_still_closes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    captured: list[str]) -> None:
    def broken(self: AlertFeed) -> list[Alert]:
        raise RuntimeError("engine bug")

    sl = StepLogger([Col("step", 5, "step", "d"), Col("loss", 7, "loss", "+.3f")], run_dir=tmp_path, console=False)
    for step in range(5):
        sl.log({"step": step, "loss": 0.5})
    monkeypatch.setattr(AlertFeed, "drain", broken)
    sl.close()
    told = capsys.readouterr().err + "".join(captured)
    assert "the last rows' alerts failed" in told and "engine bug" in told
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 5
    assert sl._writer is not None and sl._writer._fh is None  # (the file closed after the failure)


def test_a_slow_runs_alert_is_said_at_its_own_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows minutes apart (an LLM post-training step): a spike's alert is not left waiting a whole step."""
    now = [0.0]
    monkeypatch.setattr(alertfeed, "monotonic", lambda: now[0])
    feed = AlertFeed(AlertEngine())
    rnd = random.Random(5)
    said: list[tuple[int, Alert]] = []
    for i in range(60):
        now[0] = 300.0 * i
        loss = 9.0 if i == 50 else 0.5 + rnd.gauss(0, 0.01)
        said += [(i, a) for a in feed.add(i, {"loss": loss}, 1000.0 + 300.0 * i)]
    spikes = [(i, a) for i, a in said if a.step == 50]
    assert spikes and all(i == 50 for i, _ in spikes)


def test_the_waiting_rows_alerts_are_said_when_the_script_exits_without_close(tmp_path: Any) -> None:
    """A script that never calls close() (or whose loop raises) still says the alerts of its last batch."""
    assert spike_said_at_exit(tmp_path) == 1
