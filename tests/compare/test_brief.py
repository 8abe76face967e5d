"""The comparison lines of ``steptable summary`` over several arms."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from steptable.compare.brief import summary_lines
from tests.compare.helpers import MemRun, write_arms


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from steptable.cli.main import main

    rc = main(argv)
    return rc, capsys.readouterr().out


def _rows(rng: random.Random, lift: float, n: int = 300) -> list[dict[str, float]]:
    return [{"step": i, "reward": 0.5 + lift + rng.gauss(0, 0.02), "loss": 1.0 - lift + rng.gauss(0, 0.02),
             "other": rng.random()} for i in range(n)]


def test_three_arms_one_run_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(2)
    base = write_arms(tmp_path / "exp", {"absorb": _rows(rng, 0.0), "routeA": _rows(rng, 0.1),
                                         "vanilla": _rows(rng, 0.0)})
    rc, out = cli(["summary", str(base)], capsys)
    assert rc == 0
    lines = out.splitlines()
    i = lines.index("Δ vs a, steps 270-299, 95% CI:")  # the last 10% of steps 0-299: 269.1-299
    reward, loss = lines[i + 1], lines[i + 2]
    assert reward.startswith("reward: b +.09") and reward.split(",")[0].endswith(" better")  # the alert role's way
    assert loss.startswith("loss: b -.09") and loss.split(",")[0].endswith(" better")  # lower loss is better
    assert lines[i + 3].startswith("a alerts")  # two key metrics found: reward, loss (other has no direction)
    rc, out = cli(["summary", "--format", "md", str(base)], capsys)
    lines = out.splitlines()
    i = lines.index("- Δ vs a, steps 270-299, 95% CI:")
    assert lines[i + 1].startswith("- reward: b +.09") and lines[i + 3].startswith("- a alerts")


def test_seeds_are_named_by_their_arm() -> None:
    rng = random.Random(4)
    runs = [MemRun(f"{arm}_seed{s}", range(200), {"reward": [lift + rng.gauss(0, 0.1) for _ in range(200)]})
            for arm, lift in (("base", 0.0), ("new", 1.0)) for s in (1, 2, 3)]
    lines = summary_lines(runs)
    assert lines[0] == "Δ vs base, steps 180-199, 95% CI:"
    assert lines[1].startswith("reward: new +1.") and lines[1].endswith("better")


def test_one_arm_short_runs_and_runs_that_never_overlap() -> None:
    assert summary_lines([MemRun(f"a_seed{s}", range(200), {"reward": [1.0] * 200}) for s in (1, 2)]) == []
    short = [MemRun(n, range(50), {"reward": [1.0] * 50}) for n in ("a", "b")]  # 5 rows in the window
    assert summary_lines(short) == []
    apart = [MemRun("a", range(100), {"reward": [1.0] * 100}), MemRun("b", range(200, 300), {"reward": [1.0] * 100})]
    assert summary_lines(apart) == ["compare: no common range of x=step: arm 'a' (a) ends at 99 before arm 'b' (b) "
                                    "starts at 200"]
