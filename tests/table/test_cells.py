"""steptable.table.cells: untrusted text made inert (sanitize, md_escape) and measured in terminal cells
(display_width, cut, pad, cut_middle): wide characters, combining marks, emoji sequences, unterminated escapes."""

from __future__ import annotations

import pytest

from steptable.table.cells import cut, cut_middle, display_width, first_few, key_name, md_escape, sanitize
from steptable.table.formatting import format_cell


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


def test_cut_middle_keeps_both_ends() -> None:
    name = "grpo_qwen2.5-7b_lr1e-6_kl0.001_t1.0_bs512_seed0"
    assert cut_middle(name, 100) == name
    short = cut_middle(name, 16)
    assert len(short) == 16 and short.startswith("grpo_") and short.endswith("seed0") and "…" in short
    from steptable.table.formatting import display_width

    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # one emoji of four joined
    for text in (family * 6, "\u2764\ufe0f" * 8 + "_seed0", "e\u0301" * 12, "\U0001f1fa\U0001f1f8" * 6):
        for width in range(3, 14):
            out = cut_middle(text, width)
            # whole clusters only: within the width, no joiner or mark left dangling at either side of the cut
            assert display_width(out) <= width and not out.startswith(("\u200d", "\ufe0f", "\u0301"))
            assert "…\ufe0f" not in out and "…\u0301" not in out


# an OSC 52 (clipboard) with no BEL or ST after it, behind a CSI
OPEN_OSC = "armA\x1b[2JB\x1b]52;c;ZXZpb"


@pytest.mark.parametrize("intro", ["]", "P", "X", "^", "_"])  # OSC, DCS, SOS, PM, APC
def test_an_unterminated_string_sequence_loses_only_its_introducer(intro: str) -> None:
    assert sanitize(f"E [run\x1b{intro}52;c;ZXZpb] loss is nan") == "E [run52;c;ZXZpb] loss is nan"
    # a terminated one still goes whole, to BEL or ST
    assert sanitize(f"a\x1b{intro}0;title\x07b \x1b{intro}8;;http://x\x1b\\c") == "ab c"


def test_an_unterminated_osc_keeps_the_lines_and_sequences_after_it() -> None:
    assert sanitize(OPEN_OSC) == "armAB52;c;ZXZpb"
    assert sanitize("a\x1b]0;t\x1b[2Jb") == "a0;tb"  # (its payload ends at the next ESC, a CSI removed whole)
    assert sanitize("a\x1b]0;never ended\nline 2", keep_newlines=True) == "a0;never ended\nline 2"
    assert sanitize("\x1b]" * 3 + "x") == "x"


def test_md_escapes_character_references() -> None:
    assert md_escape("a&#8238;b") == "a\\&#8238;b"
    assert md_escape("&#x202E;txet &amp; P&L") == "\\&#x202E;txet \\&amp; P\\&L"


@pytest.mark.parametrize(
    ("text", "cells"),
    [("\u2764\ufe0f", 2), ("\u263a\ufe0f", 2), ("\U0001f468\u200d\U0001f469\u200d\U0001f467", 2), ("\u4e2d\ufe0f", 2),
     ("a\U0001f600b", 4), ("e\u0301", 1), ("\U0001f44d\U0001f3fb", 2), ("\U0001f3f3\ufe0f\u200d\U0001f308", 2),
     # a joiner joins emoji only (Unicode GB11): between letters (Devanagari, Malayalam use it) each keeps its cells
     ("\u00e9\u200d" * 50, 50), ("\u4e2d\u200d\u4e2d", 4), ("\U0001f468\u200d\u00e9", 3), ("\u0e35\u200d x", 2),
     ("\u1100\u1161", 2), ("\u1100\u1161\u11a8", 2)],  # decomposed Korean (macOS file names): one syllable
)  # fmt: skip
def test_emoji_sequences_measure_as_drawn(text: str, cells: int) -> None:
    assert display_width(text) == cells
    for width in range(1, 6):
        assert display_width(cut(text + "xyz", width)) <= width
    assert len(cut(text * 40, 10)) <= 40  # what is cut is cut in characters too, not only by the measure


def test_md_escape_underscores_only_at_word_edges() -> None:
    from steptable.table.formatting import md_escape

    assert md_escape("__grad_norm__ _x_ hack_s") == "\\_\\_grad_norm\\_\\_ \\_x\\_ hack_s"


def test_sanitize_removes_escapes_controls_and_bidi() -> None:
    hostile = "a\x1b[2Jb\x1b]0;pwned\x07c\x1b]52;c;ZXZpbA==\x07d\u202eevil\u202c\x00e\x9b31mf\rg\nh\ti"
    clean = sanitize(hostile)
    assert clean == "abcdevile31mfg⏎h i"  # an 8-bit CSI loses its introducer: the rest is plain text
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in clean)
    assert sanitize("x\ny", keep_newlines=True) == "x\ny"
    assert sanitize("cut\ud800utf16") == "cut\ufffdutf16"  # a lone surrogate: no encoder would take it


def test_sanitize_removes_invisible_format_characters() -> None:
    """Zero-width spaces, the soft hyphen, word joiners, BOM and tag characters (which can carry text that a
    reader never sees) are dropped; the emoji zero-width joiner and the non-joiner of Persian and Indic spelling
    stay; line separators read as newlines."""
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "ignore all")  # "ASCII smuggling" in tag characters
    text = f"a\u200bbc\u00add\u2060e\ufefff{hidden}g\U000e0001h"
    assert sanitize(text) == "abcdefgh"
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # "I want": the ZWNJ keeps the first two letters apart
    assert sanitize(persian) == persian and display_width(persian) == display_width(persian.replace("\u200c", ""))
    assert sanitize("\U0001f468\u200d\U0001f4bb") == "\U0001f468\u200d\U0001f4bb"
    assert sanitize("x\u2028y\u2029z") == "x⏎y⏎z"
    assert sanitize("x\u2028y", keep_newlines=True) == "x\ny"
    assert len(sanitize("\u00ad" * 5 + "ab").splitlines()) == 1


def test_sanitize_keeps_text_after_c1_characters() -> None:
    """UTF-8 read as Latin-1 (scraped text, LLM output) is full of C1 characters: a curly quote becomes
    "\xe2\x80\x9d", and \x9d is the 8-bit OSC introducer. Only the C1 characters go; the text after them stays (the
    rest of a completion is not deleted as if it were an OSC payload). An unterminated 7-bit OSC loses only its
    introducer (not the rest of a message built around a name holding one)."""
    moj = "He said \u201cyes\u201d, then \u201cno\u201d.\nAnswer: 7".encode().decode("latin-1")
    out = sanitize(moj, keep_newlines=True)
    assert out == "He said \xe2yes\xe2, then \xe2no\xe2.\nAnswer: 7"
    assert sanitize("ok \x9d0;title\x07 rest") == "ok 0;title rest"  # a real 8-bit OSC: inert without its introducer
    assert sanitize("a\x1b]0;never ended\nline 2", keep_newlines=True) == "a0;never ended\nline 2"
    assert not any(0x80 <= ord(ch) <= 0x9F for ch in sanitize("\x90\x98\x9b\x9c\x9d\x9e\x9fx"))


def test_display_width_and_cut_wide_chars() -> None:
    assert display_width("abc") == 3
    assert display_width("日本") == 4
    assert display_width("e\u0301") == 1
    assert cut("日本語テキスト", 5) == "日本…"
    assert display_width(cut("日本語テキスト", 5)) == 5
    assert cut("abc", 3) == "abc"


@pytest.mark.parametrize("text", ["\ufe0f", "\u200dx", "\ufe0f\u200d\ufe0f", "a\ufe0f", "x\u200dy"])
def test_a_stray_selector_or_joiner_does_not_widen_the_pad_before_it(text: str) -> None:
    # Letters and spaces have no emoji form: a selector or joiner after them changes nothing a terminal draws.
    for width in (1, 2, 5):
        for align in ("right", "left", "center"):
            assert display_width(format_cell(text, None, width, align)) == width
    assert display_width("a\ufe0f") == 1
    assert display_width("1\ufe0f\u20e3") == 2  # a keycap base does take the emoji presentation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x\u200dy\u200dz", "xyz"),  # between letters: Rich and wcwidth count each joined letter 0 cells
        ("\u4e2d\u200d\u4e2d", "\u4e2d\u4e2d"),  # between wide characters: counted 2 cells instead of 4
        ("\U0001f468\u200d\u200d\U0001f469", "\U0001f468\U0001f469"),  # two joiners join nothing: two emoji
        ("loss\u200d", "loss"),  # at an edge
        ("\u200d\U0001f469", "\U0001f469"),
        ("\u0915\u094d\u200d\u0937", "\u0915\u094d\u0937"),  # after a virama: Rich counts the consonant after it 0
        ("\U0001f468\u200d\U0001f4bb", "\U0001f468\u200d\U0001f4bb"),  # an emoji sequence is kept whole
        ("\u2764\ufe0f\u200d\U0001f525", "\u2764\ufe0f\u200d\U0001f525"),  # its selector before the joiner
        ("\U0001f469\U0001f3fd\u200d\U0001f4bb", "\U0001f469\U0001f3fd\u200d\U0001f4bb"),  # a skin tone too
    ],
)
def test_a_joiner_that_joins_no_two_emoji_is_dropped_and_every_measure_agrees(text: str, expected: str) -> None:
    """A zero-width joiner outside an emoji sequence gives the characters after it cells that Textual's measure
    (Rich's), wcwidth's and a terminal's dispute: a key of them fakes the alignment of every column after it.
    Made inert, the text measures the same to the table and to Textual."""
    from rich.cells import cell_len

    out = sanitize(text)
    assert out == expected and sanitize(text, keep_newlines=True) == expected
    assert display_width(out) == cell_len(out)


def test_first_few_names_the_first_and_counts_the_rest() -> None:
    assert first_few([]) == "" and first_few(["a", "b", "c"]) == "a, b, c"
    assert first_few(list("abcdefg")) == "a, b, c and 4 more" and first_few(list("abc"), 1) == "a and 2 more"


@pytest.mark.parametrize(("key", "name"), [
    ("", '""'), ("\u200b", '"\\u200b"'), (" ", '"\\x20"'), ("\t", '"\\t"'), ("\u2060\u2060", '"\\u2060\\u2060"'),
    ("\x1b[2J", '"\\x1b[2J"'), ("\U000e0041", '"\\U000e0041"'),
])
def test_a_key_with_no_visible_character_is_named_by_its_escapes(key: str, name: str) -> None:
    assert key_name(key) == name and name.isascii() and name.isprintable() and " " not in name


def test_a_key_with_a_visible_character_is_named_as_sanitize_writes_it() -> None:
    assert [key_name(k) for k in ("loss", "a\u200bb", "\x1b[2Jkl", "中文")] == ["loss", "ab", "kl", "中文"]
