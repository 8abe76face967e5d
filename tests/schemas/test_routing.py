"""steptable.schemas.routing: the routing arms' table in the seed's column order, its conditional columns and
mode codes, every arm on one layout (golden)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from steptable.schemafiles.resolve import detect
from steptable.schemas import ROUTING, layout
from steptable.schemas.routing import routing_columns
from steptable.table import render
from steptable.table.columns import ColumnError, streamed
from steptable.table.formatting import display_width
from tests.schemas.helpers import SEED_ORDER, read_one, render_runs, routing_rows
from tests.trainer_logs import write_routing


def test_routing_layout_matches_seed_order() -> None:
    cols = routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True)
    assert [c.key for c in streamed(cols)] == SEED_ORDER
    assert [c.key for c in cols if not c.stream] == ["gen", "fb", "t_rew", "sec"]


def test_routing_conditional_columns() -> None:
    single = [c.key for c in routing_columns(modes=["code"])]
    assert not any(k.startswith("hk_") and k not in ("hk_dep",) for k in single)
    assert "hack_abl" not in single and "solve_abl" not in single
    assert {"auroc", "cos", "qmass", "keep", "resid", "rout", "tlo", "thi", "stale"} <= set(single)
    arms = [routing_columns(modes=["a", "b"], mode_code={"a": "a", "b": "b"}) for _ in ("vanilla", "routeA")]
    assert render.header(arms[0]) == render.header(arms[1])


def test_routing_golden(golden: Callable[[str, str], None]) -> None:
    cols = streamed(routing_columns(modes=["code", "math"], mode_code={"code": "c", "math": "m"}, show_ablate=True))
    text = render.table(cols, routing_rows()) + "\n"
    golden("routing_table.txt", text)
    golden("routing_legend.txt", render.legend(routing_columns(["code", "math"], show_ablate=True)) + "\n")
    widths = {display_width(line) for line in text.splitlines()}
    assert widths == {render.width(cols)}


def test_mode_codes_measure_in_cells_and_may_not_clash() -> None:

    cols = routing_columns(modes=["code", "math"], mode_code={"code": "代码", "math": "数学"})
    hk = [c for c in cols if c.key.startswith("hk_")]
    assert [(c.header, c.width) for c in hk[-2:]] == [("hk_代码", 7), ("hk_数学", 7)]
    for modes, codes in ((["code", "coding"], {}), (["code", "x"], {"x": "dep"})):
        with pytest.raises(ColumnError, match="give it a code of its own with mode_code"):
            routing_columns(modes=modes, mode_code=codes)


Golden = Callable[[str, str], None]


def test_routing_arms_share_the_seed_layout(tmp_path: Path, golden: Golden) -> None:
    arms = write_routing(tmp_path)
    runs = [read_one(p) for p in arms.values()]
    assert {detect(r.path, r.keys).name for r in runs} == {"routing"}
    cols = layout(runs, ROUTING)
    assert [c.key for c in cols] == SEED_ORDER
    assert render.header(cols) == render.header(streamed(ROUTING.cols))
    golden("schema_routing.txt", render_runs(runs, ROUTING))
