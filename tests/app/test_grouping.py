"""steptable.app.grouping: `steptable watch` over several trainers' runs: each trainer's runs get their own layout
(``by_schema``, as tail groups them) while the arms of one experiment share one, with tables, legend, chart,
diagnostics and pins per trainer; each run's schema is detected once."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import steptable.schemafiles.resolve
import steptable.schemas.registry
from steptable import Col, StepLogger
from steptable.app.session import Session
from steptable.app.widgets.arm import ArmPanel
from steptable.app.widgets.panels import ChartPanel, LegendPanel
from steptable.ingest import Follower
from steptable.schemafiles.resolve import by_schema
from steptable.schemas import layout
from tests.app.helpers import manual_app, static_text, sync
from tests.library_logs import append_verl_row
from tests.logger.helpers import CUSTOM_COLS, log_rows
from tests.trainer_logs import (
    write_lightning,
    write_maxent_state,
    write_routing,
    write_sb3,
    write_tinker,
    write_trl_state,
    write_verl,
)

SIZE = (160, 44)


def _stores(root: Path) -> dict[str, Any]:
    fol = Follower([root])
    fol.scan()
    fol.finish()
    return {rid: fol.stores[rid] for rid in sorted(fol.stores)}


def _session(root: Path, schema: str | None = None) -> tuple[Session, dict[str, Any]]:
    stores = _stores(root)
    session = Session(schema_name=schema, near=[str(root)])
    for rid, store in stores.items():
        session.update(rid, store)
    return session, stores


def _keys(session: Session, rid: str) -> list[str]:
    return [c.key for c in session.columns(rid)[0]]


def _trl_and_maxent(root: Path) -> None:
    write_trl_state(root / "grpo-baseline")
    write_maxent_state(root / "maxent-tau0.1")


def test_a_trl_run_and_a_maxent_run_each_get_their_trainers_columns(tmp_path: Path) -> None:
    """Each run gets its own trainer's columns, not the first run's schema for the whole session (the MaxEnt run,
    whose keys are train/loss, train/reward, ..., would read all None under TRL's columns)."""
    _trl_and_maxent(tmp_path)
    session, stores = _session(tmp_path)
    assert [(s.name, len(g)) for s, g in by_schema(list(stores.values()))] == [("trl", 1), ("maxent-grpo", 1)]
    for rid, store in stores.items():
        assert session.schema(rid).name == ("trl" if "baseline" in rid else "maxent-grpo")
        assert _keys(session, rid) == [c.key for c in layout([store], session.schema(rid))]  # what tail shows
    maxent = next(rid for rid in stores if "maxent" in rid)
    assert "train/tau" in _keys(session, maxent) and "train/loss" in _keys(session, maxent)


@asynccontextmanager
async def _running(root: Path) -> AsyncIterator[tuple[Any, Any, Follower]]:
    """The app over ``root``, started, with the runs found so far on screen: (app, pilot, follower)."""
    app, follower, _ = manual_app(root, now=time.time())
    async with app.run_test(size=SIZE) as pilot:
        await sync(pilot, follower)
        yield app, pilot, follower


@pytest.mark.anyio
async def test_the_app_shows_each_trainers_runs_with_their_own_values(tmp_path: Path) -> None:
    _trl_and_maxent(tmp_path)
    async with _running(tmp_path) as (app, _, _):
        for panel in app.query(ArmPanel):
            grid = panel.grid
            assert grid.store is not None
            last = grid.store.row(len(grid.store) - 1)
            lead = [c.key for c in grid.cols[1:5]]
            assert all(last.get(k) is not None for k in lead), (panel.label, lead)  # its own keys, with values


def _verl_and_tinker(root: Path) -> None:
    write_verl(root / "verl" / "qwen_lr1e6.jsonl", steps=8)
    write_tinker(root / "tinker" / "llama-lr4e-5", steps=8)


def _panel(app: Any, word: str) -> ArmPanel:
    return next(p for p in app.query(ArmPanel) if word in p.run_id)


@pytest.mark.anyio
async def test_verl_and_tinker_tables_chart_legend_and_filter_each_follow_their_trainer(tmp_path: Path) -> None:
    """The tinker panel shows tinker's columns, not verl's, and its chart reads its values (not "min nan max
    nan")."""
    _verl_and_tinker(tmp_path)
    async with _running(tmp_path) as (app, pilot, _):
        verl, tinker = _panel(app, "verl"), _panel(app, "tinker")
        assert "critic/score/mean" in [c.key for c in verl.grid.cols]
        tinker_keys = [c.key for c in tinker.grid.cols]
        assert "env/all/reward/total" in tinker_keys and not any(k.startswith("critic/") for k in tinker_keys)

        # the chart of the picked column is its trainer's arms; the other table keeps a column of its own marked
        await pilot.press("c")
        chart = app.query_one(ChartPanel)
        first, other = (verl, tinker) if app.session.selected in [c.key for c in verl.grid.cols] else (tinker, verl)
        assert app.session.selected not in [c.key for c in other.grid.cols]
        assert [label for label, _, _ in chart.arms] == [first.label]
        assert other.grid.selected in [c.key for c in other.grid.cols] and "nan" not in static_text(chart.body)

        # a column picked in the other table: the chart follows it, the first table keeps its own
        before = first.grid.selected
        other.grid.focus()
        await pilot.press("right")
        assert app.session.selected in [c.key for c in other.grid.cols]
        assert app.session.selected not in [c.key for c in first.grid.cols]
        assert [label for label, _, _ in chart.arms] == [other.label] and first.grid.selected == before

        await pilot.press("l")
        legend = app.query_one(LegendPanel)
        titles = {title.split(" (")[0]: cols for title, cols in legend.parts if title is not None}
        assert titles == {"verl columns": verl.grid.cols, "tinker columns": tinker.grid.cols}

        # a filter picks each table's own matching columns
        app.session.pattern = "entropy"
        app.apply_columns()
        await pilot.pause()
        assert [c.key for c in verl.grid.cols] == ["step", "actor/entropy"]
        assert [c.key for c in tinker.grid.cols] == ["step", "optim/entropy"]


def test_arms_of_one_experiment_share_one_layout_beside_another_trainer(tmp_path: Path) -> None:
    write_verl(tmp_path / "exp" / "lr1e6.jsonl", steps=8, seed=1)
    write_verl(tmp_path / "exp" / "lr3e6.jsonl", steps=8, seed=2)
    write_tinker(tmp_path / "tinker" / "run", steps=8)
    write_routing(tmp_path / "routing", arms=("vanilla", "routeA"))
    session, _ = _session(tmp_path)
    assert [g.schema.name for g in session.groups] == ["verl", "routing", "tinker"]
    by_group = {g.schema.name: {tuple(_keys(session, rid)) for rid in g.runs} for g in session.groups}
    assert all(len(layouts) == 1 for layouts in by_group.values())  # one identical layout per experiment
    assert len({next(iter(v)) for v in by_group.values()}) == 3


def test_diagnostics_and_pins_are_per_trainer(tmp_path: Path) -> None:
    write_routing(tmp_path / "routing", arms=("vanilla", "routeA"))
    write_verl(tmp_path / "verl" / "exp.jsonl", steps=8)
    session, stores = _session(tmp_path)
    routing = [rid for rid in stores if rid.startswith("routing/")]
    verl = next(rid for rid in stores if rid.startswith("verl/"))
    assert session.diagnostics_runs() == routing  # verl's run has no routing diagnostics: no row of nan there
    assert session.schema().name == "generic"  # (no one schema is every run's)
    routing_before = session.columns(routing[0])
    session.toggle_pin("actor/entropy")
    cols, fixed = session.columns(verl)
    assert [c.key for c in cols[:2]] == ["step", "actor/entropy"] and fixed == 2
    assert session.columns(routing[0]) == routing_before


def test_a_new_trainers_run_mid_session_gets_its_own_group(tmp_path: Path) -> None:
    write_verl(tmp_path / "verl" / "exp.jsonl", steps=8)
    session, _ = _session(tmp_path)
    verl_layout = session.layout
    write_tinker(tmp_path / "tinker" / "run", steps=8)
    stores = _stores(tmp_path)
    rid = next(r for r in stores if r.startswith("tinker/"))
    assert session.update(rid, stores[rid])
    assert [g.schema.name for g in session.groups] == ["verl", "tinker"]
    assert session.groups[0].layout is verl_layout  # the verl run's table is not laid out again
    assert "env/all/reward/total" in _keys(session, rid)


@pytest.mark.anyio
async def test_the_app_gives_a_trainers_run_found_later_its_own_table(tmp_path: Path) -> None:
    write_verl(tmp_path / "verl" / "exp.jsonl", steps=8)
    async with _running(tmp_path) as (app, pilot, follower):
        verl_cols = _panel(app, "verl").grid.cols
        write_tinker(tmp_path / "tinker" / "run", steps=8)
        await sync(pilot, follower)
        tinker_keys = [c.key for c in _panel(app, "tinker").grid.cols]
        assert "env/all/reward/total" in tinker_keys and "critic/score/mean" not in tinker_keys
        assert _panel(app, "verl").grid.cols == verl_cols


def test_a_run_whose_keys_change_moves_to_its_trainers_group(tmp_path: Path) -> None:
    """A run that has logged only a key no trainer claims yet is a generic log of its own; once it logs verl's keys
    it is one of the verl experiment's arms and lines up with them."""
    write_verl(tmp_path / "a.jsonl", steps=6)
    late = tmp_path / "b.jsonl"
    late.write_text(json.dumps({"step": 0, "my_metric": 1.0}) + "\n")
    fol = Follower([tmp_path])
    fol.scan()
    session = Session()
    for rid in sorted(fol.stores):
        session.update(rid, fol.stores[rid])
    assert [g.schema.name for g in session.groups] == ["verl", "generic"]
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    with open(late, "a") as f:
        f.writelines(json.dumps({**r, "step": r["step"] + 1}) + "\n" for r in rows)
    fol.scan()
    assert session.update("b.jsonl", fol.stores["b.jsonl"])
    assert [g.schema.name for g in session.groups] == ["verl"]
    assert session.columns("b.jsonl") == session.columns("a.jsonl")


def test_runs_logged_with_different_columns_each_keep_their_loggers(tmp_path: Path) -> None:
    for name, cols, row in (
        ("a", [Col("step", 5, "step", "d"), Col("reward/mean", 7, "rew", "+.3f"), Col("kl", 8, "kl", ".2e")],
         {"reward/mean": 0.5, "kl": 0.01}),
        ("b", [Col("step", 5, "step", "d"), Col("train/loss", 8, "loss", ".4f")], {"train/loss": 0.25}),
    ):
        sl = StepLogger(cols, run_dir=tmp_path / name, console=False, alerts=False)
        for s in range(3):
            sl.log({"step": s, **row})
        sl.close()
    session, stores = _session(tmp_path)
    heads = {rid: [c.header.strip() for c in session.columns(rid)[0]] for rid in stores}
    assert heads == {"a/metrics.jsonl": ["step", "rew", "kl"], "b/metrics.jsonl": ["step", "loss"]}


def test_a_named_schema_lays_every_run_out_with_it(tmp_path: Path) -> None:
    _verl_and_tinker(tmp_path)
    session, stores = _session(tmp_path, schema="verl")
    assert [g.schema.name for g in session.groups] == ["verl"] and len(session.groups[0].runs) == len(stores)


def test_a_steptable_toml_that_cannot_be_used_still_leaves_each_trainer_its_columns(tmp_path: Path) -> None:
    """The file is said once and its runs shown with their best built-in schema, grouped as tail groups them: an SB3
    log and a Lightning log (both generic) are not one table of the two, half nan."""
    write_sb3(tmp_path / "exp" / "PPO_1")
    write_lightning(tmp_path / "exp" / "version_0")
    (tmp_path / "exp" / "steptable.toml").write_text('[schema]\nname = "bad name"\n')
    session, _ = _session(tmp_path)
    assert len(session.groups) == 2 and len(session.problems) == 1
    assert "rollout/ep_rew_mean" in _keys(session, "exp/PPO_1/progress.csv")
    assert "rollout/ep_rew_mean" not in _keys(session, "exp/version_0/metrics.csv")


def test_a_user_schema_beside_some_runs_is_theirs_alone(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "steptable.toml").write_text(
        '[schema]\nname = "mine"\n[[columns]]\nkey = "my/loss"\nheader = "myl"\n')
    with open(tmp_path / "mine" / "r.jsonl", "w") as f:
        f.writelines(json.dumps({"step": s, "my/loss": 1 / (s + 1)}) + "\n" for s in range(5))
    write_verl(tmp_path / "verl" / "exp.jsonl", steps=6)
    session, stores = _session(tmp_path)
    assert [session.schema(rid).name for rid in stores] == ["mine", "verl"]
    assert [c.header.strip() for c in session.columns("mine/r.jsonl")[0]] == ["step", "myl"]


def test_a_batch_of_runs_is_grouped_once_and_a_batch_of_rows_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(12):
        write_verl(tmp_path / "sweep" / f"lr{i}.jsonl", steps=4, seed=i)
    calls: list[int] = []
    real = steptable.schemafiles.resolve.by_schema

    def counted(runs: Any, schema: Any = None, schema_of: Any = None) -> Any:
        calls.append(len(runs))
        return real(runs, schema, schema_of)

    monkeypatch.setattr(steptable.schemafiles.resolve, "by_schema", counted)
    stores = _stores(tmp_path)
    session = Session()
    assert session.update_all([(rid, s, None) for rid, s in stores.items()])
    assert calls == [12] and len(session.groups) == 1
    assert not session.update_all([(rid, s, None) for rid, s in stores.items()]) and calls == [12]


def _count(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_runs_arriving_one_by_one_are_each_detected_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run's schema is detected once as runs arrive one by one (or any run's keys grow), not every run's
    again each time (60 runs would cost 1,830 detections)."""
    for i in range(8):
        write_verl(tmp_path / "sweep" / f"lr{i}.jsonl", steps=4, seed=i)
    write_tinker(tmp_path / "tinker" / "run", steps=4)
    detected = _count(monkeypatch, steptable.schemafiles.resolve, "detect")
    looked = _count(monkeypatch, steptable.schemafiles.resolve, "unused_files")
    fol = Follower([tmp_path])
    fol.scan()
    session = Session()
    made = 0
    for rid in sorted(fol.stores):
        before = [g.layout for g in session.groups]
        session.update(rid, fol.stores[rid])
        made += any(all(g.layout is not b for b in before) for g in session.groups)
    assert len(detected) == 9 and [g.schema.name for g in session.groups] == ["verl", "tinker"]
    # the steptable.toml files looked for once a layout made; not again for each arm that joins one as it is
    assert len(looked) == made < 9
    path = tmp_path / "sweep" / "lr0.jsonl"
    append_verl_row(path, 5, {"actor/new_metric": 1.0})
    fol.scan()
    assert session.update("sweep/lr0.jsonl", fol.stores["sweep/lr0.jsonl"])  # a key more: that run only
    assert len(detected) == 10 and "actor/new_metric" in [c.key for c in session.columns("sweep/lr0.jsonl")[0]]


def test_runs_logged_with_different_columns_share_no_logger_s_layout(tmp_path: Path) -> None:
    from steptable.app.session import Session
    from steptable.ingest import Follower

    log_rows(tmp_path / "a", CUSTOM_COLS, [{"step": 0, "reward/mean": 0.5, "kl": 0.01}])
    other = [Col("step", 5, "step", "d"), Col("train/loss", 8, "loss", ".4f", "the loss")]
    log_rows(tmp_path / "b", other, [{"step": 0, "train/loss": 0.25}])
    fol = Follower([tmp_path])
    fol.scan()
    session = Session()
    for rid in sorted(fol.stores):
        session.update(rid, fol.stores[rid])
    assert not session.schema().name.startswith("steplogger")  # one run's columns would mislabel the other's
