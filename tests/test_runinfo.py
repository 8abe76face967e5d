"""steptable.json: the StepLogger's own description of its run, read back by tail, summary, legend and watch."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from steptable import Col, StepLogger
from steptable.schemas import routing_columns
from steptable.table import render, runinfo
from tests.helpers import run_cli
from tests.logger.helpers import CUSTOM_COLS, log_rows


def test_tail_shows_a_run_with_the_columns_its_logger_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[dict[str, object]] = [
        {"step": s, "reward/mean": 0.5 + s / 100, "kl": 0.00123 * s, "secs": 30.5} for s in range(5)
    ]
    printed = log_rows(tmp_path / "run", CUSTOM_COLS, rows)
    info = json.loads((tmp_path / "run" / "steptable.json").read_text())
    assert info["closed"] is not None and info["rows"] == 5 and [c["key"] for c in info["columns"]][:2] == [
        "step", "reward/mean"]
    rc, out, _ = run_cli(["tail", str(tmp_path / "run"), "--width", "0"], capsys)
    lines = out.splitlines()
    assert rc == 0 and lines[0] == render.header([c for c in CUSTOM_COLS if c.stream])
    # the same cells as its stdout printed them (stdout fits each column to its values: steptable.logger.consolecols)
    assert [line.split() for line in lines[1:]] == [line.split() for line in printed]
    rc, out, _ = run_cli(["legend", str(tmp_path / "run")], capsys)
    assert "mean reward of the batch; higher is better" in out and "seconds per step" in out


def test_a_routing_run_is_read_as_routing_whatever_keys_it_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cols = routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True)
    row: dict[str, object] = {"step": 0, "rew": 0.78, "gt_s": (3, 8), "loss": 0.0185, "gn": 1.03, "lr": 1e-5}
    log_rows(tmp_path / "routeA", cols, [row], arm="routeA")
    assert (tmp_path / "routeA" / "steptable.routeA.json").exists()
    rc, out, _ = run_cli(["legend", str(tmp_path / "routeA")], capsys)
    assert rc == 0 and out.startswith("routing columns:")  # five keys only: it read as a generic run
    rc, out, _ = run_cli(["tail", str(tmp_path / "routeA")], capsys)
    assert "+0.78" in out and "3/8" in out


def test_a_closed_run_has_ended_and_does_not_stall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start = time.time() - 7200  # one row a second, two hours ago
    rows: list[dict[str, object]] = [{"step": s, "ts": start + s, "reward/mean": 0.5, "kl": 0.01} for s in range(60)]
    log_rows(tmp_path / "done", CUSTOM_COLS, rows)
    log_rows(tmp_path / "died", CUSTOM_COLS, rows, close=False)  # a crash: no close()
    rc, out, _ = run_cli(["tail", str(tmp_path), "--alerts-only"], capsys)
    assert rc == 0 and "[died] step 59 stalled" in out and "[done]" not in out
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert out.count("stalled") == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"columns": [{"key": "step", "width": 10**9, "header": "step"}]},
        {"columns": [{"key": 5, "width": 5, "header": "step"}]},
        {"columns": [{"key": "step", "width": 5, "header": "\x1b[2Jstep-and-more"}]},
        {"columns": [{"key": "step", "width": 5, "header": "step", "evil": 1}]},
        {"columns": []},
        {"jsonl": "other.jsonl"},
        {"steptable": 99},
    ],
)
def test_a_description_that_does_not_validate_is_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, object]
) -> None:
    log_rows(tmp_path / "r", CUSTOM_COLS, [{"step": 0, "reward/mean": 0.5}])
    path = tmp_path / "r" / "steptable.json"
    info = {**json.loads(path.read_text()), **bad}
    path.write_text(json.dumps(info))
    assert runinfo.parse(path.read_bytes(), tmp_path / "r" / "metrics.jsonl") is None
    rc, out, err = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0 and "\x1b" not in out and "Traceback" not in err and out.startswith("step reward")  # generic


def test_a_description_that_is_a_fifo_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log_rows(tmp_path / "r", CUSTOM_COLS, [{"step": 0, "reward/mean": 0.5}])
    (tmp_path / "r" / "steptable.json").unlink()
    os.mkfifo(tmp_path / "r" / "steptable.json")
    rc, out, _ = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0 and out.startswith("step reward")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_app_shows_an_ended_run_as_ended_not_stalled(tmp_path: Path) -> None:
    from steptable.app.widgets.arm import ArmPanel
    from tests.app.helpers import manual_app, static_text, sync

    start = time.time() - 7200
    rows: list[dict[str, object]] = [{"step": s, "ts": start + s, "reward/mean": 0.5, "kl": 0.01} for s in range(60)]
    log_rows(tmp_path / "done", CUSTOM_COLS, rows)
    app, follower, _ = manual_app(tmp_path, now=time.time())
    async with app.run_test(size=(120, 32)) as pilot:
        await sync(pilot, follower)
        app._on_tick()
        await pilot.pause()
        title = static_text(app.query_one(ArmPanel).title_bar)
        assert "run ended" in title and "STALLED" not in title
        assert [c.header.strip() for c in app.session.layout][:3] == ["step", "rew", "kl"]  # the logger's columns


def test_an_arm_other_than_its_directory_finds_its_description(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[dict[str, object]] = [{"step": s, "reward/mean": 0.5, "kl": 0.01, "secs": 3.0} for s in range(5)]
    log_rows(tmp_path / "exp1" / "seed0", CUSTOM_COLS, rows, arm="routeA")  # steptable.routeA.json in .../seed0
    rc, out, _ = run_cli(["legend", str(tmp_path)], capsys)
    # (the name is numbered per column set within a process: other tests' runs may have come first)
    assert rc == 0 and re.match(r"steplogger(-\d+)? columns:", out) and "mean reward of the batch" in out


def test_a_description_that_arrives_later_lays_the_run_out_again(tmp_path: Path) -> None:
    from tests.cli.helpers import emit, follow_tail

    d = tmp_path / "run"
    rows: list[dict[str, object]] = [{"step": s, "reward/mean": 0.5, "kl": 0.01} for s in range(3)]
    log_rows(d, CUSTOM_COLS, rows)
    info = (d / "steptable.json").read_text()
    (d / "steptable.json").unlink()
    follower, tail, out, _ = follow_tail(tmp_path, ["--width", "0"])
    emit(follower, tail)
    (d / "steptable.json").write_text(info)  # (written by the logger a moment after its first row)
    with open(d / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 3, "reward/mean": 0.25, "kl": 0.02}) + "\n")
    emit(follower, tail)
    lines = out.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines[1].split() == ["step", "reward", "kl"] and lines[-2].split() == ["step", "rew", "kl"]
    assert lines[-1].split() == ["3", "+0.250", "2.00e-2"]  # the logger's own formats


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


def test_a_run_shows_the_columns_its_logger_printed_even_those_it_never_filled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vanilla arm logs its diagnostics as None (not measured): they are not in its file, but its stdout had
    those columns, and so do tail, legend and the app's layout, alone or beside an arm that filled them."""
    cols = routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True)
    printed = {}
    for arm in ("vanilla", "routeA"):
        diag = {"auroc": 0.7, "stale": 1} if arm == "routeA" else {"auroc": None, "stale": None}
        printed[arm] = log_rows(tmp_path / arm, cols, [{"step": s, "rew": 0.5, "loss": 0.01, **diag} for s in range(3)],
                                arm=arm)
    streamed = [c for c in cols if c.stream]
    for path in (tmp_path / "vanilla", tmp_path):
        rc, out, _ = run_cli(["tail", str(path), "--width", "0", "-n", "1"], capsys)
        header = next(line for line in out.splitlines() if line.lstrip().startswith("step"))
        assert rc == 0 and header == render.header(streamed)
        # (arms in name order) the cells its stdout printed, each column there as wide as its values
        assert out.splitlines()[-1].split() == printed["vanilla"][-1].split()
    rc, out, _ = run_cli(["legend", str(tmp_path / "vanilla")], capsys)
    assert "auroc" in out and "stale" in out


def test_arms_sharing_one_file_are_runs_of_their_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two StepLoggers of different arms given one run_dir write one metrics.jsonl: every reader shows each arm's
    rows as its own run (they were merged by step, one arm's numbers under the other's name). A file whose rows
    merely carry an "arm" field, with no StepLogger description for it, stays one run."""
    from steptable.ingest.files.follow import load
    from tests.helpers import write_rows

    van = StepLogger(CUSTOM_COLS, run_dir=tmp_path / "exp", arm="vanilla", console=False, alerts=False)
    rta = StepLogger(CUSTOM_COLS, run_dir=tmp_path / "exp", arm="routeA", console=False, alerts=False)
    for s in range(5):
        van.log({"step": s, "reward/mean": 0.1})
        rta.log({"step": s, "reward/mean": 0.9, "kl": 0.5})
    van.close()
    rta.close()
    stores = load(tmp_path)
    got = {st.arm: (list(st.steps), set(st.column("reward/mean"))) for st in stores.values()}
    assert got == {"vanilla": (list(range(5)), {0.1}), "routeA": (list(range(5)), {0.9})}
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "jsonl", "-n", "1"], capsys)
    assert rc == 0 and sorted((r["arm"], r["reward/mean"]) for r in map(json.loads, out.splitlines())) == [
        ("routeA", 0.9), ("vanilla", 0.1)]
    write_rows(tmp_path / "bandit" / "metrics.jsonl", [{"step": s, "arm": "lr" if s % 2 else "rl", "r": 1}
                                                        for s in range(6)])
    assert [len(st) for st in load(tmp_path / "bandit").values()] == [6]


def test_a_filter_shows_dump_only_columns_as_the_logger_declared_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[dict[str, object]] = [{"step": s, "reward/mean": 0.5, "kl": 0.01, "secs": 30.25 + s} for s in range(3)]
    log_rows(tmp_path / "run", CUSTOM_COLS, rows)
    rc, out, _ = run_cli(["tail", str(tmp_path / "run"), "--columns", "secs", "-n", "1"], capsys)
    table = (tmp_path / "run" / "table.txt").read_text().splitlines()
    assert rc == 0 and out.splitlines()[-1].split() == ["2", "32.2"] and table[-1].split()[-1] == "32.2"
    assert out.splitlines()[0] == render.header([CUSTOM_COLS[0], CUSTOM_COLS[3]])  # declared widths, not measured ones
