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
    i = lines.index("Δ vs a (95% CI within runs: one seed each; Holm), steps 270-299:")  # last 10% of 0-299: 269.1-299
    reward, loss = lines[i + 1], lines[i + 2]
    # b (routeA) is best both ways: the alert roles' directions, higher reward and lower loss
    assert reward.startswith("reward best b: b +.09") and reward.split(",")[0].endswith(" better")
    assert loss.startswith("loss best b: b -.09") and loss.split(",")[0].endswith(" better")
    assert lines[i + 3].startswith("a b c alerts 0")  # two key metrics: reward, loss (other has no direction)
    rc, out = cli(["summary", "--format", "md", str(base)], capsys)
    lines = out.splitlines()
    i = lines.index("- Δ vs a (95% CI within runs: one seed each; Holm), steps 270-299:")
    assert lines[i + 1].startswith("- reward best b: b +.09") and lines[i + 3].startswith("- a b c alerts")


def test_seeds_are_named_by_their_arm() -> None:
    rng = random.Random(4)
    runs = [MemRun(f"{arm}_seed{s}", range(200), {"reward": [lift + rng.gauss(0, 0.1) for _ in range(200)]})
            for arm, lift in (("base", 0.0), ("new", 1.0)) for s in (1, 2, 3)]
    lines = summary_lines(runs)
    assert lines[0] == "Δ vs base (95% CI), steps 180-199:"
    assert lines[1].startswith("reward best new: new +1.") and lines[1].endswith("better")


def test_best_is_the_arm_of_the_best_mean_by_the_direction() -> None:
    """The baseline can be best (its difference is 0); a lower-is-better metric's best is the lowest; a metric
    without a direction names no best."""
    rng = random.Random(5)
    runs = [MemRun(f"{arm}_seed{s}", range(200), {"reward": [lift + rng.gauss(0, 0.05) for _ in range(200)],
                                                   "loss": [-lift + rng.gauss(0, 0.05) for _ in range(200)]})
            for arm, lift in (("base", 0.5), ("mid", 0.2), ("low", 0.0)) for s in (1, 2, 3)]
    lines = summary_lines(runs)
    reward = next(ln for ln in lines if ln.startswith("reward"))
    loss = next(ln for ln in lines if ln.startswith("loss"))
    assert reward.startswith("reward best base: mid -.") and reward.endswith("worse")  # every other arm is lower
    assert loss.startswith("loss best base: mid +.") and loss.endswith("worse")  # every other arm's loss is higher
    flipped = [MemRun(r.arm, range(200), {"loss": [-x for x in r.column("loss")]}) for r in runs]
    assert summary_lines(flipped)[1].startswith("loss best low: ")  # lower is better: low's -0 beats base's -.5


def test_no_direction_no_best() -> None:
    from steptable.compare.core import Result
    from steptable.compare.render import compact_line

    def res(arm: str, delta: float | None) -> Result:
        return Result(arm, "m", "step", 0, 1, 3, 30, 0, 1.0, 0.9, 1.1, "a", delta,
                      None if delta is None else delta - .01, None if delta is None else delta + .01, "seeds",
                      None if delta is None else "differs")

    rows = [res("a", None), res("b", .1), res("c", -.2)]
    assert compact_line(rows, {}, "a") == "m: b +.100±.010*, c -.200±.010*"
    assert compact_line(rows, {}, "a", higher=False) == "m best c: b +.100±.010*, c -.200±.010*"
    assert compact_line(rows, {"c": "z"}, "a", higher=True) == "m best b: b +.100±.010*, z -.200±.010*"


def test_one_arm_short_runs_and_runs_that_never_overlap() -> None:
    assert summary_lines([MemRun(f"a_seed{s}", range(200), {"reward": [1.0] * 200}) for s in (1, 2)]) == []
    short = [MemRun(n, range(50), {"reward": [1.0] * 50}) for n in ("a", "b")]  # 5 rows in the window
    assert summary_lines(short) == []
    apart = [MemRun("a", range(100), {"reward": [1.0] * 100}), MemRun("b", range(200, 300), {"reward": [1.0] * 100})]
    assert summary_lines(apart) == ["compare: no common range of x=step: arm 'a' (a) ends at 99 before arm 'b' (b) "
                                    "starts at 200"]


def test_a_loss_its_schema_gives_no_direction_is_not_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The routing arms' GRPO loss follows the advantages (its column declares no direction): it is neither given a
    "best" nor picked before the metrics that have one; a generic run's loss still reads lower-is-better (above)."""
    from steptable.demo.run import run_demo

    run_demo(tmp_path / "demo", steps=120, interval=0, console=False)  # (10 rows in the last 10%)
    rc, out = cli(["summary", str(tmp_path / "demo")], capsys)
    lines = out.splitlines()
    i = next(j for j, ln in enumerate(lines) if ln.startswith("Δ vs "))
    brief = lines[i + 1: i + 4]
    assert rc == 0 and [ln.split()[0] for ln in brief] == ["rew", "rew_s", "gt_s"], brief
    assert all(" best " in ln for ln in brief), brief


def test_the_marks_of_several_arms_are_holms() -> None:
    """Two arms whose own intervals exclude 0 (Welch's p .0376 and .0334) but that Holm's procedure over the two does
    not call apart: neither is marked better, and the first line says the marks are Holm's; one of them alone with
    the baseline is marked by its interval, and the line says nothing of Holm."""
    from tests.compare.helpers import constant_seeds

    lines = summary_lines(constant_seeds({"base": 0.0, "b": 2.5, "c": 2.6}, 200, "reward"))
    assert lines[0] == "Δ vs base (95% CI; Holm), steps 180-199:"
    assert lines[1].startswith("reward best c: b +2.5±") and "better" not in lines[1], lines
    lines = summary_lines(constant_seeds({"base": 0.0, "c": 2.6}, 200, "reward"))
    assert lines[0] == "Δ vs base (95% CI), steps 180-199:" and lines[1].endswith(" better"), lines
