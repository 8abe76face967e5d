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
