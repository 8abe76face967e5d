"""Which runs are seeds of one arm in watch (steptable.app.armrule): ``--group REGEX``, else the runs'
steptable.toml ``[compare]`` table, as ``compare`` reads it; the seed groups' tables and the compare view both fold
a sweep's runs by it, the compare view starting from its baseline and x axis; ``watch`` refuses a pattern that is
no regular expression and a ``[compare]`` table that cannot be used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from steptable.app import run_watch
from steptable.app.armrule import ArmRule, RuleOf, arm_rule
from steptable.app.seedgroups import GROUP_PREFIX
from tests.app.helpers import manual_app, sync

pytestmark = pytest.mark.anyio

#: a sweep's names: the seed in the middle, a run number after it (unique to each run)
SWEEP = ("lr1e-5_seed0_r1", "lr1e-5_seed1_r2", "lr3e-5_seed0_r3", "lr3e-5_seed1_r4")
GROUP = r"_seed\d+_r\d+$"


def _sweep(root: Path, toml: str = "") -> Path:
    for i, name in enumerate(SWEEP):
        p = root / name / "metrics.jsonl"
        p.parent.mkdir(parents=True)
        p.write_text("".join(json.dumps({"step": s, "loss": 1.0 + i + s / 10}) + "\n" for s in range(20)))
    if toml:
        (root / "steptable.toml").write_text(toml)
    return root


def test_the_rule_is_the_group_given_over_the_files_compare_table(tmp_path: Path) -> None:
    root = _sweep(tmp_path, f"[compare]\ngroup = '{GROUP}'\nbaseline = 'lr3e-5'\nx = 'tokens'\n")
    rule = arm_rule([str(root)])
    assert rule.pattern is not None and rule.pattern.pattern == GROUP
    assert (rule.baseline, rule.x) == ("lr3e-5", "tokens")
    given = arm_rule([str(root)], r"_r\d+$")
    assert given.pattern is not None and given.pattern.pattern == r"_r\d+$" and given.baseline == "lr3e-5"
    assert arm_rule([str(tmp_path / "lr1e-5_seed0_r1")]) == rule  # (the file above a run's directory)


def test_a_compare_table_that_cannot_be_used_leaves_the_group_given(tmp_path: Path) -> None:
    root = _sweep(tmp_path, '[compare]\ngroup = "(unclosed"\n')
    assert RuleOf([str(root)])() == ArmRule()
    kept = RuleOf([str(root)], GROUP)()
    assert kept.pattern is not None and kept.pattern.pattern == GROUP


@pytest.mark.parametrize("how", ["--group", "steptable.toml"])
async def test_a_sweeps_runs_fold_into_the_arms_the_rule_names(tmp_path: Path, how: str) -> None:
    root = _sweep(tmp_path, f"[compare]\ngroup = '{GROUP}'\n" if how == "steptable.toml" else "")
    app, follower, _ = manual_app(root, group=GROUP if how == "--group" else None)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.pause()
        shown = {rid for rid, p in app.panels.items() if p.display}
        assert shown == {GROUP_PREFIX + "lr1e-5", GROUP_PREFIX + "lr3e-5"}
        assert app.panels[GROUP_PREFIX + "lr3e-5"].label == "lr3e-5 · mean of 2 seeds"
        await pilot.press("w")
        await pilot.pause()
        live = app.screen.live  # type: ignore[attr-defined]
        assert live is not None and {g: len(m) for g, m in live.groups.items()} == {"lr1e-5": 2, "lr3e-5": 2}


@pytest.mark.parametrize(("named", "starts"), [("lr3e-5", "lr3e-5"), ("lr9", "lr1e-5")])
async def test_the_compare_view_starts_from_the_files_baseline_and_a_known_arm_otherwise(
        tmp_path: Path, named: str, starts: str) -> None:
    root = _sweep(tmp_path, f"[compare]\ngroup = '{GROUP}'\nbaseline = '{named}'\n")
    app, follower, _ = manual_app(root)
    async with app.run_test(size=(160, 40)) as pilot:
        await sync(pilot, follower)
        await pilot.press("w")
        await pilot.pause()
        assert app.screen.live.baseline == starts  # type: ignore[attr-defined]


def test_watch_refuses_a_group_that_is_no_regular_expression(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run_watch([str(_sweep(tmp_path))], group="(unclosed") == 2
    err = capsys.readouterr().err
    assert "--group '(unclosed'" in err and "missing )" in err


def test_watch_refuses_a_compare_table_that_cannot_be_used(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert run_watch([str(_sweep(tmp_path, '[compare]\ngroup = "(unclosed"\n'))]) == 2
    assert "[compare] group: not a regular expression" in capsys.readouterr().err
