"""steptable mcp, driven by the MCP SDK's own client over stdio: the tools return the CLI's text, tail's cursor
gives only the rows written since, and failures come back as tool errors in the command's words."""

from __future__ import annotations

import asyncio
import math
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from steptable.cli.tailcursor import short_key
from tests.helpers import run_cli

mcp = pytest.importorskip("mcp")

ROOT = Path(__file__).resolve().parents[2]
KEY = short_key("armA/metrics.jsonl")  # (the key of the run the tests log, in one run's cursor)


def _log(run_dir: Path, steps: range, nan_at: int | None = None) -> None:
    """Rows written by steptable's own StepLogger (the run's JSONL and description)."""
    from steptable.logger.steplogger import StepLogger
    from steptable.table.columns import Col

    cols = [Col("step", 5, "step", "d", "step"), Col("loss", 7, "loss", "+.3f", "loss"),
            Col("grad_norm", 7, "gn", ".3f", "gradient norm")]
    with StepLogger(cols, run_dir=run_dir, arm="armA", console=False, alerts=False) as sl:
        for s in steps:
            sl.log({"step": s, "loss": math.nan if s == nan_at else 0.5 - s / 100, "grad_norm": 0.4 + (s % 3) / 10})


def _ageless(text: str) -> str:
    """The text without the ages in it (a second passes between the CLI's run and the tool's), and without the
    number a process gives each StepLogger column set it meets (this test process has met others before)."""
    return re.sub(r"steplogger-\d+", "steplogger", re.sub(r"\b\d+(\.\d+)?[smhd] ago", "AGE ago", text))


def _session(body: Callable[[Any], Awaitable[None]]) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "steptable", "mcp"], cwd=str(ROOT))
        async with Client(params) as client:
            await body(client)

    asyncio.run(main())


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content)


def test_tools_return_the_cli_text_and_tail_follows_a_cursor(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    run = tmp_path / "exp" / "armA"
    _log(run, range(0, 30))
    root = str(tmp_path / "exp")
    cli: dict[str, str] = {}
    for name, argv in {"summary": ["summary", root], "legend": ["legend", root], "runs": ["runs", root],
                       "tail": ["tail", root, "--run", "armA", "--since", "24"]}.items():
        rc, out, err = run_cli(argv, capsys)
        assert rc == 0, err
        cli[name] = out + err
    seen: dict[str, str] = {}

    async def body(client: Any) -> None:
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == {"runs", "summary", "tail", "alerts", "legend", "compare"}
        for name in ("summary", "legend", "runs"):
            seen[name] = _text(await client.call_tool(name, {"path": root}))
        seen["tail"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "since_step": 24}))
        seen["page"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "since_step": 24,
                                                             "max_rows": 2}))
        _log_more()  # the run goes on: the cursor gives the new rows only
        seen["next"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "since_step": 29}))
        seen["none"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "since_step": 34}))
        seen["last2"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "last": 2}))

    def _log_more() -> None:
        from tests.helpers import write_rows

        write_rows(run / "metrics.jsonl", [{"step": s, "loss": 0.1, "grad_norm": 0.5} for s in range(30, 35)])

    _session(body)
    for name in ("summary", "legend", "runs", "tail"):
        assert _ageless(seen[name]) == _ageless(cli[name]), name  # one code path: the same text
    steps = [int(line.split()[0]) for line in seen["tail"].splitlines() if line.split()[0].isdigit()]
    assert steps == [25, 26, 27, 28, 29]
    assert seen["tail"].rstrip().endswith(f"cursor 29:5@{KEY} (--since it prints what follows)")
    # a page: the earliest rows after the cursor, how many are left, and the cursor where the next page starts
    steps = [int(line.split()[0]) for line in seen["page"].splitlines() if line.split()[0].isdigit()]
    assert steps == [25, 26] and "3 more row(s) of armA/metrics.jsonl after step 26" in seen["page"]
    assert seen["page"].rstrip().endswith(f"cursor 26:5@{KEY} (--since it prints what follows)")
    steps = [int(line.split()[0]) for line in seen["next"].splitlines() if line.split()[0].isdigit()]
    assert steps == [30, 31, 32, 33, 34]
    assert "cursor 34" in seen["next"]
    assert [ln for ln in seen["none"].splitlines() if ln.split()[0].isdigit()] == []
    assert "cursor 34" in seen["none"]
    steps = [int(line.split()[0]) for line in seen["last2"].splitlines() if line.split()[0].isdigit()]
    assert steps == [33, 34] and "cursor 34" in seen["last2"]  # no since_step: the last rows, and the cursor


def test_tail_of_the_last_rows_comes_a_page_at_a_time(tmp_path: Path) -> None:
    """``last`` of more rows than ``max_rows`` (0: all of a run's) came whole (a 100k-step run's, 20 MB): now the
    earliest max_rows of them, how many are left, and the cursor from which the next page follows on."""
    _log(tmp_path / "armA", range(0, 250))
    root = str(tmp_path)
    seen: dict[str, str] = {}

    async def body(client: Any) -> None:
        seen["all"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "last": 0}))
        seen["huge"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "last": 10**9,
                                                             "max_rows": 40}))
        cursor = re.findall(r"cursor (\S+) ", seen["huge"])[-1]
        seen["next"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "since_step": cursor,
                                                             "max_rows": 40}))
        seen["few"] = _text(await client.call_tool("tail", {"path": root, "run": "armA", "max_rows": 3}))

    def steps(text: str) -> list[int]:
        return [int(ln.split()[0]) for ln in text.splitlines() if ln.split()[0].isdigit()]

    _session(body)
    assert steps(seen["all"]) == list(range(100)) and "150 more row(s) of armA/metrics.jsonl after step 99" in (
        seen["all"]) and f"cursor 99:5@{KEY} " in seen["all"]
    assert steps(seen["huge"]) == list(range(40)) and steps(seen["next"]) == list(range(40, 80))
    assert steps(seen["few"]) == [230, 231, 232]  # (the earliest of the last 20)


def test_alerts_since_a_cursor_and_failures_in_the_commands_words(tmp_path: Path) -> None:
    _log(tmp_path / "armA", range(0, 40), nan_at=20)
    root = str(tmp_path)
    seen: dict[str, Any] = {}

    async def body(client: Any) -> None:
        seen["all"] = _text(await client.call_tool("alerts", {"path": root}))
        seen["after"] = _text(await client.call_tool("alerts", {"path": root, "since_step": 20}))
        seen["bad_run"] = await client.call_tool("tail", {"path": root, "run": "nope"})
        seen["no_path"] = await client.call_tool("summary", {"path": str(tmp_path / "missing")})
        seen["bad_last"] = await client.call_tool("tail", {"path": root, "run": "armA", "last": -1})
        seen["unknown"] = await client.call_tool("tail", {"path": root, "run": "armA", "since": 30})
        seen["schema"] = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        (tmp_path / "starting").mkdir()  # a run whose trainer has not logged its first row (a model loading)
        (tmp_path / "starting" / "metrics.jsonl").write_text("")
        seen["starting"] = await client.call_tool("alerts", {"path": root, "since_step": 10})
        seen["one"] = await client.call_tool("alerts", {"path": root, "since_step": 10, "run": "armA"})

    _session(body)
    # a run with no rows yet does not turn the others' alerts into a failure without a cursor
    assert not seen["starting"].is_error, _text(seen["starting"])
    said = _text(seen["starting"])
    assert any(ln.startswith("E ") and "loss" in ln for ln in said.splitlines()), said
    assert "no rows yet in" in said and "starting" in said and "(of 2 runs; " in said  # (each run's mark)
    one = _text(seen["one"])  # one run followed alone: its own cursor, no other run's note
    assert not seen["one"].is_error and "starting" not in one and "step 20 loss" in one
    assert f"cursor 39:5@{KEY} " in one  # (its row's cells: alerts of cells merged into it come next time)
    assert any(ln.startswith("E ") and "loss" in ln for ln in seen["all"].splitlines()), seen["all"]
    assert not any(ln.startswith("E ") for ln in seen["after"].splitlines()), seen["after"]  # told before the cursor
    assert "cursor 39" in seen["after"]
    for key, words in (("bad_run", "no run 'nope'"), ("no_path", "missing"), ("bad_last", "last must be 0 or more"),
                       ("unknown", "tail has no parameter 'since'; its parameters: path, run, since_step")):
        assert seen[key].is_error and words in _text(seen[key]), (key, _text(seen[key]))
    # an argument a tool does not take is refused, not dropped (the rows before the cursor were sent as if asked)
    assert all(schema.get("additionalProperties") is False for schema in seen["schema"].values())


def test_alerts_of_a_sweep_come_a_page_at_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """120 runs with an error each: the reply held every alert line (a 300-run sweep's, 44,408 characters); now the
    CLI's first 100 lines, a line saying what is left and how to ask for it, the next page from there, and the
    cursor after each page."""
    from tests.helpers import write_rows

    for i in range(120):
        write_rows(tmp_path / f"run{i:03d}" / "metrics.jsonl",
                   [{"step": s, "loss": math.nan if s == 2 else 0.5} for s in range(4)])
    root = str(tmp_path)
    rc, cli, _ = run_cli(["tail", "--alerts-only", root], capsys)
    assert rc == 1
    lines = cli.splitlines(keepends=True)
    assert len(lines) == 120
    seen: dict[str, str] = {}

    async def body(client: Any) -> None:
        seen["first"] = _text(await client.call_tool("alerts", {"path": root}))
        seen["next"] = _text(await client.call_tool("alerts", {"path": root, "from_line": 100}))

    _session(body)
    key = re.findall(r"pages_read=(\w+) ", seen["first"])[0]
    first, cursor = seen["first"].rsplit(f"(20 more line(s) of 120: from_line=100, pages_read={key} with the same "
                                         "since_step gives the next (the cursor below is past them all); max_lines=0 "
                                         "all)\n", 1)
    assert first == "".join(lines[:100]) and cursor.startswith("steptable tail: cursor ")
    assert seen["next"].startswith("".join(lines[100:])) and "more line(s)" not in seen["next"]
    assert seen["next"].splitlines()[-1] == cursor.rstrip("\n")


def test_alerts_written_between_two_pages_are_not_skipped(tmp_path: Path) -> None:
    """A run's new alert between page 1 and page 2 moves the lines on: page 2 from the line page 1 left off at
    served page 1's last line again, the new alert (among the lines already read) never, and its cursor passed
    it. The page given pages_read says the alerts changed, and gives no cursor; read again, the alert is there."""
    from tests.helpers import write_rows

    for i in range(120):
        write_rows(tmp_path / f"run{i:03d}" / "metrics.jsonl",
                   [{"step": s, "loss": math.nan if s == 2 else 0.5} for s in range(4)])
    root = str(tmp_path)
    seen: dict[str, Any] = {}

    async def body(client: Any) -> None:
        seen["first"] = _text(await client.call_tool("alerts", {"path": root}))
        key = re.findall(r"pages_read=(\w+) ", seen["first"])[0]
        seen["same"] = _text(await client.call_tool("alerts", {"path": root, "from_line": 100, "pages_read": key}))
        write_rows(tmp_path / "run010b" / "metrics.jsonl",  # (a run that started since: its lines among page 1's)
                   [{"step": s, "loss": math.nan if s == 2 else 0.5} for s in range(4)])
        seen["next"] = await client.call_tool("alerts", {"path": root, "from_line": 100, "pages_read": key})
        seen["again"] = _text(await client.call_tool("alerts", {"path": root, "max_lines": 0}))

    _session(body)
    assert "run119" in seen["same"] and "changed" not in seen["same"]  # (nothing new: the next page)
    told = _text(seen["next"])
    assert seen["next"].is_error and "the alerts changed since the page before" in told and "tail: cursor" not in told
    assert "[run010b] step 2" in seen["again"], seen["again"]


def test_compare_returns_the_commands_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two arms of one experiment: the compare tool's text is `steptable compare`'s, window and all."""
    from steptable.logger.steplogger import StepLogger
    from steptable.table.columns import Col

    cols = [Col("step", 5, "step", "d", "step"), Col("reward", 7, "reward", ".3f", "reward", better="higher")]
    for arm, lift in (("vanilla", 0.0), ("routeA", 0.2)):
        with StepLogger(cols, run_dir=tmp_path / "exp" / arm, arm=arm, console=False, alerts=False) as sl:
            for s in range(200):
                sl.log({"step": s, "reward": 0.3 + lift + 0.01 * ((s * 7) % 5)})
    root = str(tmp_path / "exp")
    rc, cli, err = run_cli(["compare", root, "--baseline", "vanilla", "--window", "0.2"], capsys)
    assert rc == 0, err
    seen: dict[str, str] = {}

    async def body(client: Any) -> None:
        got = await client.call_tool("compare", {"path": root, "baseline": "vanilla", "window": "0.2"})
        seen["compare"] = _text(got)
        bad = await client.call_tool("compare", {"path": root, "baseline": "nosucharm"})
        seen["bad"] = _text(bad) if bad.is_error else ""
        some = await client.call_tool("compare", {"path": root, "baseline": "vanilla", "window": "0.2",
                                                  "metrics": "rew*"})
        seen["some"] = _text(some)
        none = await client.call_tool("compare", {"path": root, "baseline": "vanilla", "metrics": "nothing*"})
        seen["none"] = _text(none) if none.is_error else ""

    _session(body)
    assert seen["compare"] == cli + err and "routeA" in seen["compare"]
    assert seen["compare"].splitlines()[-1].startswith("reward (higher is better): best routeA ")
    assert seen["compare"].endswith("against vanilla: 1 better; one seed each: the seeds' spread unknown\n")
    assert "nosucharm" in seen["bad"]
    assert seen["some"] == seen["compare"] and "--metrics 'nothing*' matches no numeric key" in seen["none"]


def test_compare_takes_the_seed_part_of_a_sweeps_names(tmp_path: Path) -> None:
    """Runs named lr1e-5_seed3_r12: the default seed part leaves every run an arm of its own, and the tool had no
    parameter for the command's --group (refused as unknown), so an agent could not compare the sweep's arms."""
    from tests.helpers import write_rows

    for r in range(6):
        lr = ("1e-5", "3e-5")[r % 2]
        write_rows(tmp_path / f"lr{lr}_seed{r // 2}_r{r}" / "metrics.jsonl",
                   [{"step": s, "reward": 0.5 + (r % 2) * 0.2 + 0.01 * ((s * 7 + r) % 5)} for s in range(50)])
    seen: dict[str, Any] = {}

    async def body(client: Any) -> None:
        seen["arms"] = await client.call_tool("compare", {"path": str(tmp_path), "baseline": "lr1e-5",
                                                         "group": r"_seed\d+_r\d+"})

    _session(body)
    assert not seen["arms"].is_error, _text(seen["arms"])
    assert "arms: lr1e-5 3 seeds, lr3e-5 3 seeds" in _text(seen["arms"]), _text(seen["arms"])


def test_tail_takes_the_cursor_of_a_run_still_going_as_written(tmp_path: Path) -> None:
    """A run still going ends its reply with a cursor such as ``4:3`` (its last row's cells): given back as it is
    (a string), the row comes again once an evaluation was merged into it; a plain step still goes as an integer."""
    from tests.helpers import write_rows

    path = tmp_path / "exp" / "live" / "metrics.jsonl"
    write_rows(path, [{"step": s, "loss": 0.5, "grad_norm": 0.4} for s in range(5)])
    root = str(tmp_path / "exp")
    seen: dict[str, str] = {}

    async def body(client: Any) -> None:
        seen["first"] = _text(await client.call_tool("tail", {"path": root, "run": "live", "since_step": 0}))
        cursor = re.findall(r"cursor (\S+) ", seen["first"])[-1]
        write_rows(path, [{"step": 4, "val_loss": 0.375}])
        seen["again"] = _text(await client.call_tool("tail", {"path": root, "run": "live", "since_step": cursor}))
        cursor = re.findall(r"cursor (\S+) ", seen["again"])[-1]
        seen["none"] = _text(await client.call_tool("tail", {"path": root, "run": "live", "since_step": cursor}))

    _session(body)
    key = short_key("live/metrics.jsonl")
    assert seen["first"].rstrip().endswith(f"cursor 4:3@{key} (--since it prints what follows)"), seen["first"]
    rows = [ln.split() for ln in seen["again"].splitlines() if ln.split()[0].isdigit()]
    assert [r[0] for r in rows] == ["4"] and "val_loss" in seen["again"] and f"cursor 4:4@{key} " in seen["again"]
    assert not [ln for ln in seen["none"].splitlines() if ln.split()[0].isdigit()]
    assert f"cursor 4:4@{key} " in seen["none"]


def test_tail_serves_again_a_row_changed_before_the_cursor_and_tells_a_resume_past_it(tmp_path: Path) -> None:
    """Following a run with the cursor each reply ends with: an evaluation merged into an older step (landing two
    steps late) comes with the next reply, and a resume to a step before the cursor is said, with the rows from it,
    though the resumed run has passed the cursor by then."""
    from tests.helpers import write_rows

    path = tmp_path / "exp" / "live" / "metrics.jsonl"
    root = str(tmp_path / "exp")
    replies: list[str] = []

    async def body(client: Any) -> None:
        cursor: str | int = -1

        async def poll() -> None:
            nonlocal cursor
            replies.append(_text(await client.call_tool("tail", {"path": root, "run": "live", "since_step": cursor})))
            cursor = re.findall(r"cursor (\S+) ", replies[-1])[-1]

        for s in range(6):
            write_rows(path, [{"step": s, "loss": 1 + s / 100}])
            if s == 4:
                write_rows(path, [{"step": 2, "eval_acc": 502}])
            await poll()
        write_rows(path, [{"step": s, "loss": 9 + s / 100} for s in range(3, 9)])  # resumed at step 3
        await poll()

    _session(body)
    assert sum("502" in r for r in replies) == 1 and "502" in replies[4]  # (with the poll after it landed)
    assert "resumed at step 3, at or before --since 5" in replies[-1]
    rows = [ln.split() for ln in replies[-1].splitlines() if ln.split()[0].isdigit()]
    assert [r[0] for r in rows] == [str(s) for s in range(3, 9)] and rows[0][-1] == "9.03"


def test_tail_of_an_arms_seeds_serves_a_late_evaluation_and_a_new_seed(tmp_path: Path) -> None:
    """Three seeds of one arm followed with the tail tool over stdio: the cursor of several runs was a plain step, so
    an evaluation merged into an older row of one seed never came, and a seed that started later came from the
    cursor's step. The token each reply ends with brings both."""
    from tests.helpers import write_rows

    def rows(k: int, steps: range) -> None:
        write_rows(tmp_path / "exp" / f"seed{k}" / "metrics.jsonl",
                   [{"step": s, "arm": "routeA", "loss": 0.5} for s in steps])

    for k in range(3):
        rows(k, range(10))
    root = str(tmp_path / "exp")
    replies: list[str] = []

    async def body(client: Any) -> None:
        args = {"path": root, "run": "routeA"}
        replies.append(_text(await client.call_tool("tail", {**args, "since_step": -1})))
        write_rows(tmp_path / "exp" / "seed1" / "metrics.jsonl", [{"step": 4, "eval/acc": 0.625}])
        rows(3, range(12))
        cursor = re.findall(r"cursor (\S+) ", replies[-1])[-1]
        replies.append(_text(await client.call_tool("tail", {**args, "since_step": cursor})))

    _session(body)
    blocks = {b.split(")", 1)[0]: b for b in replies[1].split("── routeA (")[1:]}
    assert set(blocks) == {"seed1/metrics.jsonl", "seed3/metrics.jsonl"}, replies[1]
    assert [ln.split()[0] for ln in blocks["seed1/metrics.jsonl"].splitlines() if ln.split()[0].isdigit()] == ["4"]
    assert ".625" in blocks["seed1/metrics.jsonl"]
    assert len([ln for ln in blocks["seed3/metrics.jsonl"].splitlines() if ln.split()[0].isdigit()]) == 12
    assert "(of 3 runs; --since it prints what follows)" in replies[0], replies[0]


def test_tail_of_an_arm_of_many_seeds_shares_max_rows_among_them(tmp_path: Path) -> None:
    """An arm of 30 seeds followed from its start: max_rows was a page per run (3,000 rows of reply for 100 asked;
    an arm of 40 seeds, 75,789 characters); now 100 rows in all, each seed's share the earliest after the cursor,
    and page after page every row of every seed comes once. A seed that goes on alone gets the whole page."""
    from tests.helpers import write_rows

    def rows(k: int, steps: range) -> None:
        write_rows(tmp_path / f"seed{k}" / "metrics.jsonl",
                   [{"step": s, "arm": "routeA", "loss": 0.5, "tag": k * 1000 + s} for s in steps])

    for k in range(30):
        rows(k, range(12))
    root = str(tmp_path)
    replies: list[str] = []

    async def body(client: Any) -> None:
        cursor: int | str = -1
        for _ in range(5):
            replies.append(_text(await client.call_tool("tail", {"path": root, "run": "routeA", "since_step": cursor,
                                                                 "columns": "tag"})))
            cursor = re.findall(r"cursor (\S+) ", replies[-1])[-1]
        rows(7, range(12, 200))  # (one seed goes on)
        replies.append(_text(await client.call_tool("tail", {"path": root, "run": "routeA", "since_step": cursor,
                                                             "columns": "tag"})))

    _session(body)
    tags = [[int(ln.split()[1]) for ln in r.splitlines() if len(ln.split()) == 2 and ln.split()[0].isdigit()]
            for r in replies]
    assert [len(t) for t in tags] == [100, 100, 100, 60, 0, 100], [len(t) for t in tags]
    seen = sorted(t for page in tags[:5] for t in page)
    assert seen == sorted(k * 1000 + s for k in range(30) for s in range(12))  # every row once
    assert tags[5] == [7000 + s for s in range(12, 112)]  # (the whole page the one seed's that has rows)


def test_legend_and_compare_of_many_keys_come_a_page_at_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    """Two arms of 300 keys: legend and compare replies were the whole text (a 3,000-key run's, 292,404 and 334,516
    characters); now the CLI's first 100 lines, a line saying what is left and how to ask for it, and the next page
    from where it says."""
    from tests.helpers import write_rows

    for arm, lift in (("base", 0.0), ("new", 0.1)):
        write_rows(tmp_path / "exp" / arm / "metrics.jsonl",
                   [{"step": s, **{f"actor/m{k:03d}": (s * k) % 7 + lift for k in range(300)}} for s in range(40)])
    root = str(tmp_path / "exp")
    cli: dict[str, list[str]] = {}
    for name, argv in (("legend", ["legend", root]), ("compare", ["compare", root, "--baseline", "base"])):
        rc, out, err = run_cli(argv, capsys)
        assert rc == 0, err
        cli[name] = out.splitlines(keepends=True)
    seen: dict[str, str] = {}

    async def body(client: Any) -> None:
        for name, args in (("legend", {}), ("compare", {"baseline": "base"})):
            seen[name] = _text(await client.call_tool(name, {"path": root, **args}))
            seen[name + "2"] = _text(await client.call_tool(name, {"path": root, "from_line": 100, **args}))

    _session(body)
    assert seen["legend"] == "".join(cli["legend"][:100]) + (
        f"({len(cli['legend']) - 100} more line(s) of {len(cli['legend'])}: from_line=100 gives the next; "
        "max_lines=0 all)\n")
    assert seen["legend2"].startswith("".join(cli["legend"][100:200]))
    assert seen["compare"].startswith("".join(cli["compare"][:100])) and len(seen["compare"]) < 10_000
    assert f"more line(s) of {len(cli['compare'])}: metrics='GLOBS' compares fewer, from_line=100" in seen["compare"]
    assert seen["compare2"].startswith("".join(cli["compare"][100:200]))


def test_an_unexpected_error_says_its_type_and_message(tmp_path: Path) -> None:
    """A bug of steptable's (an OverflowError on huge values) reached the agent as "Error executing tool summary" and
    nothing else: the tool error names the exception and its message, on one line, no traceback."""
    from mcp import Client

    from steptable.agents.server import build

    def broken(argv: list[str], out: Any, err: Any) -> int:
        raise OverflowError("(34, 'Numerical result\nout of range')")

    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(build(broken)) as client:
            seen["summary"] = await client.call_tool("summary", {"path": str(tmp_path)})

    asyncio.run(main())
    assert seen["summary"].is_error
    assert _text(seen["summary"]) == ("Error executing tool summary: OverflowError: (34, 'Numerical result out of "
                                      "range')")
