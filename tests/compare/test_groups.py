"""Seeds grouped into arms: by name, by directory, by a pattern."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from steptable.compare import group_runs, run_name, split_name
from steptable.compare.core import CompareError, compile_group
from tests.compare.helpers import write_arms


@pytest.mark.parametrize(("name", "group", "seed"), [
    ("routeA_seed1", "routeA", "1"), ("routeA-s2", "routeA", "2"), ("routeA/seed3", "routeA", "3"),
    ("routeA_seed=4", "routeA", "4"), ("routeA.S10", "routeA", "10"), ("vanilla", "vanilla", ""),
    ("seed3", "seed3", ""), ("class3", "class3", ""), ("runs2", "runs2", ""), ("gpt_s2_lr3", "gpt_s2_lr3", ""),
])
def test_default_seed_part(name: str, group: str, seed: str) -> None:
    assert split_name(name) == (group, seed)


def test_custom_pattern() -> None:
    assert split_name("exp_run3_lr1e-4", re.compile(r"_run\d+")) == ("exp_lr1e-4", "run3")
    assert split_name("exp_run3", re.compile(r"(?P<arm>.*)_run(?P<seed>\d+)")) == ("exp", "3")
    assert split_name("other", re.compile(r"_run\d+")) == ("other", "")
    with pytest.raises(CompareError, match="--group"):
        compile_group("(unclosed")


def test_seed_directories_found_by_discovery(tmp_path: Path) -> None:
    """``routeA/seed3/metrics.jsonl``: discovery names the run's arm ``seed3``; the comparison names it routeA/seed3."""
    from steptable.ingest import Follower

    rows = [{"step": 0, "m": 1.0}]
    named = {f"{a}/seed{s}": rows for a in ("routeA", "vanilla") for s in (1, 2)}
    base = write_arms(tmp_path / "exp", {**named, "absorb": rows})
    f = Follower([base])
    f.scan()
    f.finish()
    stores = sorted(f.stores.values(), key=lambda s: str(s.path))
    assert sorted(run_name(s) for s in stores) == ["absorb", "routeA/seed1", "routeA/seed2", "vanilla/seed1",
                                                   "vanilla/seed2"]
    groups = group_runs(stores)
    assert {g: [m.seed for m in ms] for g, ms in groups.items()} == {"absorb": [""], "routeA": ["1", "2"],
                                                                     "vanilla": ["1", "2"]}
