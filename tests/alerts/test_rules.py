"""steptable.alerts.rules: how a cell is read as a number or a fraction, the role table in force, an alert as one
inert line."""

from __future__ import annotations

import math

from steptable.alerts.engine import cell_float, cell_frac
from steptable.alerts.rules import DEFAULT_ROLES, Alert, AlertConfig
from tests.alerts.helpers import Unfloatable


def test_cell_parsing() -> None:
    assert cell_float("1e-3") == 1e-3 and cell_float(True) == 1.0 and cell_float((3, 4)) == 0.75
    assert cell_float("3/4") == 0.75 and cell_float([1, 0]) is None and cell_float("abc") is None
    assert cell_float(10**400) == math.inf and cell_float(Unfloatable()) is None and cell_float(1j) is None
    assert math.isnan(cell_float("nan") or 0.0)
    assert cell_frac((3, 8)) == (3.0, 8.0) and cell_frac("1/2") == (1.0, 2.0) and cell_frac((1, math.nan)) is None


def test_a_role_given_replaces_the_default_keys_and_an_empty_one_turns_it_off() -> None:
    cfg = AlertConfig(roles={"loss": ("my/loss",), "kl": ()})
    roles = cfg.role_keys()
    assert roles["loss"] == ("my/loss",) and roles["kl"] == () and roles["reward"] == DEFAULT_ROLES["reward"]
    assert "my/loss" in cfg.watched() and "loss" not in cfg.watched() and "critic/kl" not in cfg.watched()
    assert AlertConfig().watched() == frozenset(k for keys in DEFAULT_ROLES.values() for k in keys)


def test_an_alert_is_one_inert_line() -> None:
    a = Alert("E", 812, "loss", "nonfinite", "non-finite (NaN) after 811 finite steps")
    assert a.line() == "E step 812 loss non-finite (NaN) after 811 finite steps"
    assert Alert("W", 5, "", "stall", "no new row for 2h").line() == "W step 5 no new row for 2h"
    hostile = Alert("W", 1, "arm\x1b[2J", "spike", "spike\x1b]52;c;eA==\x07 2")
    assert "\x1b" not in hostile.line() and "\x07" not in hostile.message_line()
