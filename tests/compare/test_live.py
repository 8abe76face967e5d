"""LiveCompare: the same results as compare() while runs grow, resume and move the window."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from steptable.compare import choose_window, compare, group_runs, make_arms, parse_window, pick_metrics
from steptable.compare.live import LiveCompare
from steptable.ingest import RunStore
from steptable.ingest.parsed import Parsed


def _store(name: str) -> RunStore:
    return RunStore(f"{name}/metrics.jsonl", f"/nonexistent/{name}/metrics.jsonl", arm=name)


def _add(store: RunStore, steps: list[int], rng: random.Random, lift: float) -> None:
    rows = []
    for _ in steps:
        row: dict[str, Any] = {"m": 1.0 + lift + rng.gauss(0, 0.1), "tok": 100.0 * (1 + lift)}
        if rng.random() < 0.05:
            row["m"] = None  # a logged null
        if rng.random() < 0.3:
            row["sparse"] = rng.random()
        rows.append(row)
    store.add(Parsed(steps=steps, rows=rows), now=math.nan)


def _batch(stores: list[RunStore], x: str, window: str | None) -> list[Any]:
    arms = make_arms(group_runs(stores), x)
    # the baseline first, as LiveCompare orders them
    arms = sorted(arms, key=lambda a: a.name != "base")
    return compare(arms, "base", pick_metrics(arms), choose_window(arms, parse_window(window)))


def _same(live: list[Any], batch: list[Any]) -> None:
    assert [(r.arm, r.metric) for r in live] == [(r.arm, r.metric) for r in batch]
    for a, b in zip(live, batch, strict=True):
        for k, v in b.record().items():
            w = a.record()[k]
            if isinstance(v, float):
                assert w == pytest.approx(v, rel=1e-9, abs=1e-12), (a.arm, a.metric, k)
            else:
                assert w == v, (a.arm, a.metric, k)


@pytest.mark.parametrize(("x", "window"), [("step", None), ("tok:sum", None), ("step", "0.3")])
def test_live_matches_compare_while_runs_grow(x: str, window: str | None) -> None:
    rng = random.Random(9)
    spec = [("base_seed1", 0.0), ("base_seed2", 0.0), ("new_seed1", 0.2), ("new_seed2", 0.2), ("solo", 0.1)]
    stores = [_store(n) for n, _ in spec]
    for st, (_, lift) in zip(stores, spec, strict=True):
        _add(st, list(range(300)), rng, lift)
    live = LiveCompare(stores, "base", x=x, window=window)
    _same(live.update(), _batch(stores, x, window))
    for k in range(30):  # rows arrive unevenly: the window follows the slowest run
        for st, (_, lift) in zip(stores, spec, strict=True):
            n = rng.randrange(0, 60)
            _add(st, list(range(st.steps[-1] + 1, st.steps[-1] + 1 + n)), rng, lift)
        _same(live.update(), _batch(stores, x, window))
        if k == 10:  # a resume replaces the last 100 rows of one run: it is indexed again
            last = stores[2].steps[-1]
            _add(stores[2], list(range(last - 100, last + 20)), rng, 0.2)
            assert stores[2].resumes
            _same(live.update(), _batch(stores, x, window))


def test_live_compacts_and_stays_right(monkeypatch: pytest.MonkeyPatch) -> None:
    import steptable.compare.live as live_mod

    monkeypatch.setattr(live_mod, "COMPACT_MIN", 16)
    rng = random.Random(2)
    stores = [_store(n) for n in ("base", "other")]
    for st in stores:
        _add(st, list(range(50)), rng, 0.0)
    live = LiveCompare(stores, "base")
    live.update()
    for _ in range(40):
        for st in stores:
            _add(st, list(range(st.steps[-1] + 1, st.steps[-1] + 41)), rng, 0.0)
        _same(live.update(), _batch(stores, "step", None))
    assert all(ix.anchor > 1000 for ix in live.index.values())  # the prefix before the window was dropped


def test_live_constant_after_varied_rows_is_that_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A metric constant in the window after rows that varied (a warm-up, then a fixed value): its running sums
    carry those rows' rounding, but the live mean is the value itself, as compare()'s is: no spread, no difference
    between arms that log it, no verdict. Before, arms of one constant differed by 1e-14 and were called "differs"."""
    import steptable.compare.live as live_mod

    monkeypatch.setattr(live_mod, "COMPACT_MIN", 64)  # compaction rebases the sums too
    rng = random.Random(0)
    names = ["base_seed1", "base_seed2", "other_seed1", "solo"]
    stores = [_store(n) for n in names]
    live = LiveCompare(stores, "base")
    ends = [0] * len(stores)
    for _ in range(60):
        for i, st in enumerate(stores):
            n, a = rng.randrange(1, 40), ends[i]
            rows = [{"c": 0.0123 if t > 300 else rng.random(), "m": rng.random()} for t in range(a, a + n)]
            st.add(Parsed(steps=list(range(a, a + n)), rows=rows), now=math.nan)
            ends[i] += n
        results = live.update()
        _same(results, _batch(stores, "step", None))
        assert live.window is not None
        if live.window.lo > 300:
            for r in (r for r in results if r.metric == "c"):
                assert (r.mean, r.lo, r.hi, r.verdict) == (0.0123, 0.0123, 0.0123, None), r
                assert r.arm == "base" or (r.delta, r.delta_lo, r.delta_hi) == (0.0, 0.0, 0.0), r
    assert live.window is not None and live.window.lo > 300


def test_live_window_is_not_ended_by_a_run_without_the_metrics() -> None:
    """As compare: a run that logs none of the metrics (other keys) does not end the common range."""
    stores = [_store(n) for n in ("base", "other", "copy")]
    for st, n, key in zip(stores, (300, 300, 50), ("m", "m", "train/m"), strict=True):
        st.add(Parsed(steps=list(range(n)), rows=[{key: 1.0 + i / 100} for i in range(n)]), now=math.nan)
    live = LiveCompare(stores, "base")
    results = live.update()
    assert live.window is not None and live.window.hi == 299
    _same(results, _batch(stores[:2], "step", None))


def test_live_with_no_metric_in_common_gives_no_result() -> None:
    """Two arms whose keys differ (rew, train/rew): no metric, no result, and no error out of the window."""
    stores = [_store(n) for n in ("base", "copy")]
    for st, key in zip(stores, ("rew", "train/rew"), strict=True):
        st.add(Parsed(steps=list(range(50)), rows=[{key: 1.0 + i / 100} for i in range(50)]), now=math.nan)
    assert LiveCompare(stores, "base").update() == []
    assert LiveCompare(stores, "copy").update() == []


def test_live_unknown_baseline() -> None:
    from steptable.compare import CompareError

    st = _store("a")
    _add(st, list(range(10)), random.Random(1), 0.0)
    with pytest.raises(CompareError, match="no arm 'zzz'"):
        LiveCompare([st], "zzz").update()




def test_live_leaves_out_what_the_schema_keeps_out_of_its_table(trl_wandb_run: Path) -> None:
    """The watch's comparison of a GRPOTrainer's W&B run: its metrics in the trl schema's order, without the
    profiling timings its table leaves out (``steptable compare`` picks the same)."""
    from tests.ingest.writers import only, read_once

    store = only(read_once(trl_wandb_run / "wandb"))
    metrics = list(dict.fromkeys(r.metric for r in LiveCompare([store], store.arm or store.name).update()))
    assert metrics[:2] == ["train/loss", "train/reward"] and "train/step_time" in metrics, metrics
    assert not any(m.startswith("profiling/") for m in metrics), metrics
