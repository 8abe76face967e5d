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
