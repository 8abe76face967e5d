"""A comparison's numbers as text (steptable.compare.render): enough digits for the interval's half-width to show
two, a signed difference, the ``±`` form ``summary`` adds."""

from __future__ import annotations

import random

from steptable.compare.render import interval_text, pm_text


def test_interval_text() -> None:
    assert interval_text(.512, .498, .526) == ".512 [.498, .526]"
    assert interval_text(1.00012, 1.00008, 1.00016) == "1.00012 [1.00008, 1.00016]"
    assert interval_text(.03, .01, .05, signed=True) == "+.03 [+.01, +.05]"
    assert interval_text(0.5, None, None) == ".5"  # no interval: the value alone
    assert interval_text(None, None, None) == "-"


def test_pm_text() -> None:
    assert pm_text(.03, .018, .042) == "+.030±.012"
    assert pm_text(-.02, -.032, -.008) == "-.020±.012"
    assert pm_text(.03, .03, .03) == "+.03±0"
    assert pm_text(.03, None, None) == "+.03"
    assert pm_text(-.0269, -.0325, -.0213) == "-.027±.006"  # 560: one significant digit
    assert pm_text(.0269, .0172, .0366) == "+.027±.010"  # 970: up to .010, two digits
    assert pm_text(1.234, 1.199, 1.269) == "+1.234±.035"  # 350: two digits
    assert pm_text(12.3, 9.3, 15.3) == "+12.3±3.0"  # 300: two digits
    assert pm_text(12.3, 7.3, 17.3) == "+12±5"


def test_the_header_names_the_run_that_ends_the_common_range() -> None:
    """A sweep whose one crashed run ends at step 59 while the others reach 99: the default window sits at 54-59, and
    the header says which run put it there; where every run ends together it names none."""
    from steptable.compare import choose_window, group_runs, make_arms, parse_window
    from steptable.compare.render import header_lines
    from tests.compare.helpers import MemRun

    runs = [MemRun(f"a_seed{i}", range(100), {"m": [1.0] * 100}) for i in (1, 2)]
    crashed = MemRun("b_seed1", range(60), {"m": [1.0] * 60})
    arms = make_arms(group_runs([*runs, crashed]), "step")
    head = header_lines(arms, choose_window(arms, parse_window(None)), "a")[0]
    assert head.endswith("window steps 54-59 (last 10% of the common range 0-59: b_seed1 ends at 59)"), head
    arms = make_arms(group_runs(runs), "step")
    assert header_lines(arms, choose_window(arms, parse_window(None)), "a")[0].endswith("range 0-99)")


def test_the_verdicts_name_the_best_arm_and_how_many_beat_the_baseline() -> None:
    """Three seeds an arm: ``up`` 0.1 above the baseline (noise 0.01: beyond chance), ``same`` level with it, ``down``
    0.1 below; reward higher is better, loss lower, ``kl`` without a direction (no verdict line)."""
    import random

    from steptable.compare import choose_window, compare, group_runs, make_arms, parse_window
    from steptable.compare.render import md_report, text_report, verdict_lines
    from steptable.table.formatting import md_escape
    from tests.compare.helpers import MemRun

    rng = random.Random(3)
    runs = [MemRun(f"{arm}_seed{s}", range(100), {k: [lift * sign + rng.gauss(0, 0.01) for _ in range(100)]
                                                  for k, sign in (("reward", 1), ("loss", 1), ("kl", 1))})
            for arm, lift in (("base", 0.0), ("up", 0.1), ("same", 0.0), ("down", -0.1)) for s in (1, 2, 3)]
    arms = make_arms(group_runs(runs), "step")
    window = choose_window(arms, parse_window(None))
    dirs = {"reward": "higher", "loss": "lower", "kl": None}
    results = compare(arms, "base", ["reward", "loss", "kl"], window, dirs)
    reward, loss = verdict_lines(results, "base", dirs)
    assert reward.startswith("reward (higher is better): best up ")
    assert " vs the baseline (beyond chance over 3 arms); " in reward
    assert reward.endswith("against base: 1 better, 1 worse, 1 not told apart"), reward
    assert loss.startswith("loss (lower is better): best down ") and loss.endswith(
        "against base: 1 better, 1 worse, 1 not told apart"), loss
    text = text_report(arms, window, "base", results, dirs)
    assert text.endswith(f"\n\n{reward}\n{loss}\n")
    md = md_report(arms, window, "base", results, dirs)
    assert md.endswith(f"|\n\n- {md_escape(reward)}\n- {md_escape(loss)}\n")
    alone = [r for r in results if r.arm in ("base", "same")]
    (line, _) = verdict_lines(alone, "base", dirs)
    assert line.endswith("against base: 1 not told apart") and ("best base" in line) == (line.count("(the baseline)")
                                                                                           == 1)


def test_verdicts_say_which_arms_have_no_interval_or_no_value() -> None:
    """An arm whose one seed drifts has a difference without an interval, one with no value in the window has no
    difference: neither is "not told apart", and the best arm's difference without an interval is said to have
    none, not to be "not beyond chance"."""
    from steptable.compare.core import Result
    from steptable.compare.render import verdict_lines

    def res(arm: str, mean: float | None, delta: float | None, ci: str | None, lo: float | None = None) -> Result:
        return Result(arm, "reward", "step", 0.0, 9.0, 1, 10, 0, mean, None, None, "base", delta, lo,
                      None if lo is None else lo + 0.1, ci, None)

    results = [res("base", .3, None, "batches"), res("drifts", .878, .578, "drift"), res("blank", None, None, None),
               res("near", .31, .01, "batches", -.04)]
    (line,) = verdict_lines(results, "base", {"reward": "higher"})
    assert line.startswith("reward (higher is better): best drifts .878, +.578 vs the baseline (no interval); ")
    assert line.endswith("against base: 1 not told apart, 1 no interval, 1 no value; one seed each: the seeds' "
                         "spread unknown"), line


def test_verdicts_of_runs_of_one_seed_each_say_the_seeds_spread_is_unknown() -> None:
    """Every arm one seed: the interval is the runs' own noise (batch means), and the verdict line says a difference
    beyond it is one of these runs; with an arm of several seeds the one-seed arm is spread as their seeds are, and
    the line speaks of chance."""
    import random

    from steptable.compare import choose_window, compare, group_runs, make_arms, parse_window
    from steptable.compare.render import text_report, verdict_lines
    from tests.compare.helpers import MemRun

    rng = random.Random(5)

    def run(name: str, lift: float) -> MemRun:
        return MemRun(name, range(100), {"reward": [lift + rng.gauss(0, 0.01) for _ in range(100)]})

    dirs = {"reward": "higher"}
    for runs, seeds in (([run("base", 0), run("up", .1)], "one seed each"),
                        ([run("base", 0), run("up_seed1", .1), run("up_seed2", .1)], "")):
        arms = make_arms(group_runs(runs), "step")
        window = choose_window(arms, parse_window(None))
        results = compare(arms, "base", ["reward"], window, dirs)
        (line,) = verdict_lines(results, "base", dirs)
        text = text_report(arms, window, "base", results, dirs)
        if seeds:
            assert "(beyond the runs' own noise)" in line and line.endswith("one seed each: the seeds' spread unknown")
            assert "arms: base 1 seed (interval from 10 batch means)" in text
        else:
            assert "(beyond chance)" in line and "one seed each" not in line
            assert "base 1 seed (interval from the other arms' seed spread)" in text


def test_pm_text_of_an_interval_off_zero_never_reads_as_reaching_it() -> None:
    """[.000269, .009467]: the PDG rounding gives ±.005 and the value .005, which reads as an interval reaching 0;
    one more place is shown where the rounded value would not exceed the rounded half-width."""
    assert pm_text(.004868, .000269, .009467) == "+.0049±.0046"
    assert pm_text(-.004868, -.009467, -.000269) == "-.0049±.0046"
    assert pm_text(.004, -.0006, .0086) == "+.004±.005"  # an interval holding 0 is shown as the PDG rounds it


def test_a_sweep_of_arms_that_do_not_differ_rarely_calls_its_best_beyond_chance() -> None:
    """20 arms of 3 seeds, none different (a seed's window mean N(0, 1)), 200 sweeps: the verdict line calls its best
    arm better beyond chance, and counts an arm better or worse, in at most 8% of sweeps (Holm over the 19 arms
    tested: 5% family-wise). Each arm by its own interval, the best was called better in 16% of these sweeps and
    some arm better or worse in 32%."""
    from steptable.compare.core import Cell, Window, metric_results
    from steptable.compare.render import verdict_lines
    from steptable.compare.stats import seeds_spread

    rng = random.Random(20261201)
    window = Window(0.0, 1.0, (0.0, 1.0), "last 10%")
    best = counted = 0
    lines = []
    for _ in range(200):
        cells = {f"a{k}": Cell(seeds_spread([rng.gauss(0, 1) for _ in range(3)]), 3, 3, 0) for k in range(20)}
        results = metric_results("reward", cells, "a0", "higher", "step", window)
        (line,) = verdict_lines(results, "a0", {"reward": "higher"})
        lines.append(line)
        best += "(beyond chance" in line
        told = line.rsplit(": ", 1)[-1]  # (how the arms stand: "19 not told apart")
        counted += " better" in told or " worse" in told
    assert best <= 0.08 * 200 and counted <= 0.08 * 200, (best, counted)
    assert all("chance over 19 arms)" in ln or "(the baseline); against a0 (Holm, 19 arms): " in ln for ln in lines)


def test_every_view_of_a_comparison_says_what_holm_says() -> None:
    """Two arms whose own 95% intervals each exclude 0 (p .0376 and .0334) but that Holm's procedure over the two
    does not call apart (.0334 > .025): the table marks neither better and says why, the verdict line calls the
    best not beyond chance over 2 arms and counts none better, the JSONL keeps the intervals with a null verdict."""
    import json

    from steptable.compare import choose_window, compare, group_runs, make_arms
    from steptable.compare.render import HOLM_NOTE, jsonl_report, md_report, text_report
    from steptable.table.formatting import md_escape
    from tests.compare.helpers import constant_seeds

    arms = make_arms(group_runs(constant_seeds({"base": 0.0, "b": 2.5, "c": 2.6})), "step")
    window = choose_window(arms, 0.1)
    dirs = {"m": "higher"}
    results = compare(arms, "base", ["m"], window, dirs)
    text = text_report(arms, window, "base", results, dirs)
    rows = [ln for ln in text.splitlines() if "[" in ln and not ln.startswith(("metric", "m (higher"))]
    assert len(rows) == 3 and not any(ln.rstrip().endswith(("better", "worse")) for ln in rows), text
    assert HOLM_NOTE in text
    assert text.rstrip().endswith("vs the baseline (not beyond chance over 2 arms); against base: 2 not told apart")
    assert md_escape(HOLM_NOTE) in md_report(arms, window, "base", results, dirs)
    recs = [json.loads(ln) for ln in jsonl_report(results).splitlines()]
    assert [(r["arm"], r["verdict"], r["delta_lo"] > 0) for r in recs[1:]] == [("b", None, True), ("c", None, True)]
    assert set(recs[0]) == {"arm", "metric", "x", "x_from", "x_to", "n_seeds", "n_points", "n_missing", "mean",
                            "lo", "hi", "baseline", "delta", "delta_lo", "delta_hi", "ci", "verdict"}
    # the one arm alone against the baseline: its interval is the test, called better, no note
    pair = [a for a in arms if a.name != "b"]
    results = compare(pair, "base", ["m"], choose_window(pair, 0.1), dirs)
    text = text_report(pair, choose_window(pair, 0.1), "base", results, dirs)
    assert HOLM_NOTE not in text and text.rstrip().endswith("(beyond chance); against base: 1 better")
