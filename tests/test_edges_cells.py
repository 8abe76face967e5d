"""Edges of text measuring and middle cuts (mutation testing found them unpinned)."""

from __future__ import annotations

import pytest

from steptable.table.cells import cut_middle, display_width


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("abcdef", 6, "abcdef"),  # a name that fits exactly is shown whole
        ("abcdef", 3, "a…f"),  # three cells are enough to keep both ends
        ("abcdefghij", 6, "abc…ij"),  # the start gets the odd cell: 3 cells before the ellipsis, 2 after
    ],
)
def test_cut_middle(text: str, width: int, expected: str) -> None:
    assert cut_middle(text, width) == expected


def test_cut_middle_with_a_leading_combining_mark() -> None:
    # a stray combining mark at the start (a name cut from a longer one) must not break the cut
    out = cut_middle("\u0301abcdefgh", 5)
    assert out.endswith("gh") and "…" in out
    assert display_width(out) <= 5


def test_spacing_combining_mark_takes_no_cell() -> None:
    # U+1D165 (a spacing mark with a combining class) attaches to the character before it, as wcwidth counts it
    assert display_width("a\U0001d165") == 1


def test_decomposed_hangul_syllable_is_two_cells() -> None:
    # leading consonant + vowel + final consonant U+11FF (the last of the block) draw as one 2-cell syllable
    assert display_width("\u1100\u1161\u11ff") == 2


def test_emoji_joined_to_first_mahjong_tile_is_one_glyph() -> None:
    # U+1F000 is Extended_Pictographic: after an emoji and a zero-width joiner it is part of the one glyph
    assert display_width("\U0001f468\u200d\U0001f000") == 2
