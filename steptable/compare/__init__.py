"""Which arm wins: arms aligned on an x axis (step, tokens, samples, time), seeds grouped, window means with 95%
intervals and differences against a baseline arm. Pure: it reads runs' columns (``RunStore``) and returns results
and text; reading files is the caller's (``steptable compare``, ``summary``).

- :mod:`~steptable.compare.xaxis`: one run's x per row;
- :mod:`~steptable.compare.groups`: which runs are seeds of one arm;
- :mod:`~steptable.compare.core`: the window and the comparison (the definitions);
- :mod:`~steptable.compare.stats` and :mod:`~steptable.compare.tdist`: the statistics, Student-t quantiles;
- :mod:`~steptable.compare.family`: which of several arms are apart from the baseline (Holm's procedure);
- :mod:`~steptable.compare.render`: text, markdown, JSONL.
"""

from steptable.compare.core import (
    Arm,
    CompareError,
    Result,
    Window,
    choose_window,
    compare,
    compile_group,
    make_arms,
    parse_window,
    pick_metrics,
    with_metrics,
)
from steptable.compare.groups import Member, group_runs, run_name, split_name
from steptable.compare.xaxis import X_NAMES, XAxis, XError, x_values

__all__ = [
    "X_NAMES", "Arm", "CompareError", "Member", "Result", "Window", "XAxis", "XError", "choose_window", "compare",
    "compile_group", "group_runs", "make_arms", "parse_window", "pick_metrics", "run_name", "split_name",
    "with_metrics", "x_values",
]
