"""Holm's step-down procedure (steptable.compare.family) on p-values worked by hand."""

from __future__ import annotations

from steptable.compare.family import holm


def test_holm_steps_down_until_the_first_it_keeps() -> None:
    # m = 4, sorted .005 .01 .03 .04 against .05/4 .05/3 .05/2 .05/1: .005 <= .0125, .01 <= .0167, .03 > .025 stops
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    # .0128 is past Bonferroni's .0125 but within Holm's second step (.0167)
    assert holm([0.008, 0.0128, 0.0376, 1.0]) == [True, True, False, False]


def test_holm_stops_where_a_step_up_procedure_would_go_on() -> None:
    # .04 > .05/2: kept, and .045 with it (Hochberg's step-up would reject both: .045 <= .05)
    assert holm([0.04, 0.045]) == [False, False]
    assert holm([0.02, 0.03]) == [True, True]  # .02 <= .025, then .03 <= .05


def test_no_p_value_is_no_test_and_one_test_is_itself() -> None:
    assert holm([0.03, None]) == [True, False]  # m = 1: the test at .05
    assert holm([0.03, 0.04, None, None]) == [False] * 4  # m = 2: .03 > .025
    assert holm([]) == [] and holm([None]) == [False]
    assert holm([0.05]) == [True] and holm([0.0500001]) == [False]
    assert holm([float("nan"), 0.001]) == [False, True]  # (NaN counts in m, never rejected)
