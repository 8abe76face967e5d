"""The run list's rows (steptable.app.runrows), without textual: the filter's words, sort and its reversal, pins
first, runs without the sort column's value last."""

from __future__ import annotations

import pytest

from steptable.app.runrows import FilterError, ListState, label, parse_filter, shown
from steptable.summary.sweep import RunDigest
from tests.app.sweephelpers import Row


def _digest(run: str, loss: float) -> RunDigest:
    return RunDigest(run, run, "jsonl", 1, 1, True, 0, 0.0, None, None, 1, last={"loss": loss})


def test_filter_words_all_must_match() -> None:
    a = Row("exp/lr1e-5_seed1", "lr1e-5_seed1", {"optim": {"lr": 1e-05}, "optim.lr": 1e-05})
    b = Row("exp/lr2e-5_seed2", "lr2e-5_seed2", {"optim.lr": 2e-05})
    assert [parse_filter("seed1")(r) for r in (a, b)] == [True, False]  # a substring, any case
    assert [parse_filter("*SEED[12]")(r) for r in (a, b)] == [True, True]  # a glob
    assert [parse_filter("re:lr2e-5_s")(r) for r in (a, b)] == [False, True]
    assert [parse_filter("lr=1e-5")(r) for r in (a, b)] == [True, False]  # a config key's last part
    assert [parse_filter("seed lr=2e-5")(r) for r in (a, b)] == [False, True]
    assert parse_filter("")(a)
    with pytest.raises(FilterError, match="bad regular expression"):
        parse_filter("re:(")


def test_sort_pins_and_runs_without_a_value() -> None:
    rows = [Row("c", "c", digest=_digest("c", 0.3)), Row("a", "a", digest=_digest("a", 0.1)),
            Row("b", "b"), Row("d", "d", digest=_digest("d", 0.2))]
    state = ListState(metrics=["loss"])
    assert [r.run_id for r in shown(rows, state, 0.0)] == ["a", "b", "c", "d"]
    state.sort_by("loss")
    assert [r.run_id for r in shown(rows, state, 0.0)] == ["a", "d", "c", "b"]  # b has no digest: last
    state.sort_by("loss")  # again: reversed, b still last
    assert state.reverse and [r.run_id for r in shown(rows, state, 0.0)] == ["c", "d", "a", "b"]
    state.pin("b")
    state.pattern = "a"  # pins stay whatever the filter
    assert [r.run_id for r in shown(rows, state, 0.0)] == ["b", "a"]
    state.pin("b")
    assert state.pinned == [] and state.columns()[-1] == "loss"
    state.toggle("a")
    state.toggle("c")
    state.toggle("a")
    assert state.selected == {"c"}


def test_runs_whose_metric_ended_nan_or_inf_sort_last_either_way() -> None:
    """A diverged run (its newest loss NaN, or inf) is at the end of the list sorted by loss, in both orders."""
    import math

    rows = [Row(r, r, digest=_digest(r, v)) for r, v in (("inf", math.inf), ("a", 0.1), ("nan", math.nan), ("b", 0.2))]
    state = ListState(metrics=["loss"])
    state.sort_by("loss")
    assert [r.run_id for r in shown(rows, state, 0.0)] == ["a", "b", "inf", "nan"]
    state.sort_by("loss")
    assert [r.run_id for r in shown(rows, state, 0.0)] == ["b", "a", "inf", "nan"]


def test_state_memo_judges_each_digest_once_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    import steptable.app.runrows as runrows

    judged: list[float] = []
    real = runrows.run_state
    monkeypatch.setattr(runrows, "run_state", lambda d, now, config=None: judged.append(now) or real(d, now))
    memo = runrows.StateMemo()
    a, b = _digest("a", 0.1), _digest("b", 0.2)
    assert memo(a, 10.2) == real(a, 10.2) and memo(a, 10.9) == real(a, 10.9)
    assert judged == [10.2]  # the same digest in the same second: judged once
    memo(b, 10.5)
    memo(a, 11.0)  # a new second: judged again
    newer = _digest("a", 0.3)  # the index replaced a's digest: a new judgement
    memo(newer, 11.1)
    assert judged == [10.2, 10.5, 11.0, 11.1]


def test_state_memo_judges_a_settled_run_once_and_a_live_one_each_second(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import steptable.app.runrows as runrows

    judged: list[tuple[str, float]] = []
    real = runrows.run_state
    monkeypatch.setattr(runrows, "run_state",
                        lambda d, now, config=None: judged.append((d.run, now)) or real(d, now, config))
    memo = runrows.StateMemo()
    # one row every 10 s, last at t=1000: live, then stalled past 100 s of quiet, then idle past 1800 s
    live = dataclasses.replace(_digest("live", 0.1), updated=1000.0, interval=10.0)
    ended = dataclasses.replace(_digest("ended", 0.1), updated=1000.0, interval=10.0, end="")
    crashed = dataclasses.replace(_digest("crashed", 0.1), updated=1000.0, interval=10.0, end="Error")
    seen = []
    for now in (1001.0, 1002.0, 1200.0, 1201.0, 3000.0, 3001.0, 9000.0):
        for d in (live, ended, crashed):
            assert memo(d, now) == real(d, now)
        seen.append(memo(live, now))
    assert seen == ["live", "live", "stalled", "stalled", "idle", "idle", "idle"]
    assert [t for r, t in judged if r == "ended"] == [1001.0] == [t for r, t in judged if r == "crashed"]
    assert [t for r, t in judged if r == "live"] == [1001.0, 1002.0, 1200.0, 1201.0, 3000.0]  # idle: settled


def test_a_directorys_metrics_jsonl_is_listed_as_the_directory() -> None:
    """A sweep's StepLogger runs: ``lr1e-4_beta0.04_seed0/metrics.jsonl`` was 14 cells of file name a line, the seed
    cut from a narrow list; now ``lr1e-4_beta0.04_seed0/``. Another file in a directory, or a file given alone, keeps
    its name."""
    assert [label(Row(rid, "x")) for rid in ("a/b/metrics.jsonl", "a/metrics.routeA.jsonl", "metrics.jsonl",
                                             "tb/events.out.tfevents.1.host")] == [
        "a/b/", "a/metrics.routeA.jsonl", "metrics.jsonl", "tb/events.out.tfevents.1.host"]


def test_a_run_named_by_its_record_shows_and_sorts_by_that_name() -> None:
    """W&B runs' ids are their files (``wandb/offline-run-<time>-<id>/run-<id>.wandb``); their record names them."""
    def wandb_run(rid: str, arm: str) -> Row:
        path = f"wandb/offline-run-2026112{rid}/run-{rid}.wandb"
        return Row(path, "offline-run", digest=RunDigest(path, arm, "wandb", 1, 1, True, 0, 0.0, None, None, 1))

    rows = [wandb_run("1-zz", "lo_seed0"), wandb_run("2-aa", "hi_seed1"), Row("hi_seed0/metrics.jsonl", "hi_seed0",
                                                                             digest=_digest("hi_seed0", 1.0))]
    assert [label(r) for r in rows] == ["lo_seed0 · wandb/offline-run-20261121-zz/run-1-zz.wandb",
                                        "hi_seed1 · wandb/offline-run-20261122-aa/run-2-aa.wandb",
                                        "hi_seed0/"]  # (its id holds its name; its metrics.jsonl: the directory's)
    assert [r.digest.arm for r in shown(rows, ListState(), 0.0) if r.digest] == ["hi_seed0", "hi_seed1", "lo_seed0"]


def test_names_sort_by_their_numbers_as_numbers() -> None:
    """A sweep's seeds came seed0, seed1, seed10, seed11, ..., seed2 (the names' text); they sort as their numbers,
    each way, and names that differ only in text keep the text's order."""
    names = ["lr1e-5_seed10", "lr1e-5_seed2", "lr1e-5_seed1", "lr1e-5_seed0", "lr3e-6_seed1", "lr1e-5_seedb",
             "lr1e-5_seeda"]
    rows = [Row(n, n) for n in names]
    state = ListState()
    expected = ["lr1e-5_seed0", "lr1e-5_seed1", "lr1e-5_seed2", "lr1e-5_seed10", "lr1e-5_seeda", "lr1e-5_seedb",
                "lr3e-6_seed1"]
    assert [r.run_id for r in shown(rows, state, 0.0)] == expected
    state.sort_by("name")
    assert state.reverse and [r.run_id for r in shown(rows, state, 0.0)] == expected[::-1]
