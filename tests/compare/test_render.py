"""A comparison's numbers as text (steptable.compare.render): enough digits for the interval's half-width to show
two, a signed difference, the ``±`` form ``summary`` adds."""

from __future__ import annotations

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
    assert reward.startswith("reward (higher is better): best up ") and " vs the baseline (beyond chance); " in reward
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
