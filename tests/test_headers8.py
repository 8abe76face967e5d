"""Review 8: headers that look alike are alike.

Keys from files may differ only in characters a terminal does not draw (joiners, the grapheme joiner, variation
selectors, tag characters, Mongolian free variation selectors), in composed vs decomposed accents, or in which blank
they hold. Two columns must never read the same: such twins get ``~N`` like any other collision, while joiners and
selectors that do change the glyph (an emoji sequence, an emoji presentation) keep headers apart.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from steptable.schemas.headers import look, short_headers
from tests.helpers import run_cli, write_rows
from tests.schemas.helpers import seen

#: the reviewer's keys: seven that read "loss", two that read "café", one homoglyph (Cyrillic dze)
LOSSES = ["loss", "loss\u200c", "loss\u034f", "loss\ufe00", "lo\u200dss", "loss\U000e0100", "loss\u180b"]
CAFES = ["caf\u00e9", "cafe\u0301"]
DZE = "los\u0455"


def test_invisible_and_decomposed_twins_are_counted() -> None:
    hs = short_headers([*LOSSES, *CAFES, DZE])
    assert len({seen(h) for h in hs.values()}) == len(hs)
    assert hs["loss"] == "loss" and hs["caf\u00e9"] == "caf\u00e9"  # the first of each keeps the plain header
    assert sorted(seen(hs[k]) for k in LOSSES[1:]) == [f"loss~{n}" for n in range(2, 8)]
    assert seen(hs["cafe\u0301"]) == "caf\u00e9~2"
    assert hs[DZE] == DZE  # a homoglyph is drawn differently enough to be left alone (no confusables table)


def test_twin_of_a_declared_header_is_counted() -> None:
    assert seen(short_headers(["step\u200c"], reserved=["step"])["step\u200c"]) == "step~2"


def test_twins_grow_a_segment_before_taking_a_counter() -> None:
    """Like any two keys whose last segments read alike, they are told apart by the segment before."""
    assert short_headers(["a/loss", "b/loss\u200d"]) == {"a/loss": "a/loss", "b/loss\u200d": "b/loss\u200d"}


def test_cut_headers_that_read_alike_are_counted() -> None:
    """Too wide to show whole, two keys whose cut forms differ only in a joiner must not both take them."""
    keys = ["ab\u200ccdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz"]
    hs = short_headers(keys)
    assert len({seen(h) for h in hs.values()}) == 2
    assert seen(hs[keys[1]]).endswith("~2")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("\U0001f468\u200d\U0001f4bb", "\U0001f468\U0001f4bb"),  # one glyph (man technologist) vs two emoji
        ("\u2764\ufe0f", "\u2764"),  # the selector widens the heart to its 2-cell emoji form
    ],
)
def test_joiners_and_selectors_that_change_the_glyph_keep_headers_apart(a: str, b: str) -> None:
    assert short_headers([a, b]) == {a: a, b: b}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ab", "a\u200db"),  # a joiner between letters joins nothing
        ("\U0001f44d", "\U0001f44d\ufe0f"),  # already drawn as an emoji: the selector changes nothing
        ("loss", "loss\u2800"),  # a trailing braille blank is no cell anyone reads
    ],
)
def test_headers_that_differ_in_nothing_drawn_are_counted(a: str, b: str) -> None:
    hs = short_headers([a, b])
    assert hs[a] == a and hs[b].endswith("~2")


def test_keys_that_differ_only_in_their_kind_of_blank_are_counted() -> None:
    # a no-break space and an en space are the same blank cell: both are "_" in a header, the second counted
    assert short_headers(["lo\u00a0ss", "lo\u2002ss"]) == {"lo\u00a0ss": "lo_ss", "lo\u2002ss": "lo_ss~2"}


def test_tail_header_row_reads_each_column_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = [*LOSSES, *CAFES, DZE]
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": s, **{k: i + s / 10 for i, k in enumerate(keys)}}
                                                  for s in range(3)])
    rc, out, _ = run_cli(["tail", str(tmp_path / "r")], capsys)
    assert rc == 0
    header = [seen(h) for h in out.splitlines()[0].split()]
    assert len(header) == 1 + len(keys) and len(set(header)) == len(header), header


def test_csv_column_names_are_told_apart_by_look_as_the_table_headers_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the CSV header compared raw strings: two "café" columns and a "loss" holding a joiner
    keys = ["loss", "lo\u200dss", "caf\u00e9", "cafe\u0301"]
    write_rows(tmp_path / "r" / "metrics.jsonl", [{"step": 0, **{k: i for i, k in enumerate(keys)}}])
    rc, out, _ = run_cli(["tail", str(tmp_path), "--format", "csv"], capsys)
    header = next(csv.reader([out.splitlines()[0]]))
    assert rc == 0 and header[:3] == ["run", "arm", "step"], header
    shown = [look(h) for h in header[3:]]
    assert len(set(shown)) == len(shown) == 4, header


def test_a_lead_behind_a_grouping_namespace_stays_in_the_header() -> None:
    # verl's perf/mfu/<stage> read as "actor_infer", "ref", "critic": the names of other metric families
    h = short_headers(["perf/mfu/actor_infer", "perf/mfu/ref", "perf/throughput", "train/eval/loss", "env/all/reward"])
    assert h == {"perf/mfu/actor_infer": "mfu/actor_infer", "perf/mfu/ref": "mfu/ref", "perf/throughput": "thru",
                 "train/eval/loss": "eval/loss", "env/all/reward": "reward"}
