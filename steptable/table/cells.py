"""Text in cells: untrusted text made inert (:func:`sanitize`, :func:`md_escape`; a key by :func:`key_name`) and
measured in terminal cells (:func:`display_width`, :func:`cut`, :func:`pad`: wide characters count 2, combining
marks 0, an emoji sequence as the one glyph a terminal draws). Pure. steptable.table.formatting re-exports all of
it, beside the number formats.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any

#: the text of a logged value that is not a finite number (NaN); +/-inf are "inf" / "-inf"
NAN = "NaN"
#: the text of a cell whose key was not logged in its row: blank, so a sparse column does not read as NaN filler
ABSENT = ""
ELLIPSIS = "…"

# C0 and C1 controls, DEL, and the Unicode bidi/isolate overrides and invisible formatting characters that can
# reorder or hide text on a terminal. An ESC sequence is removed whole where we can recognise it (CSI, OSC, DCS...),
# so "\x1b[2J" leaves nothing rather than "[2J". A string sequence (OSC, DCS...) with no BEL or ST on its line loses
# only its introducer, as an 8-bit one does below: swallowed to the line's end, a name holding one would delete the
# rest of every message built around it (the path after an arm's name, a warning after a file's).
_ESC_SEQ = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    # OSC / DCS / SOS / PM / APC, to BEL or ST. The payload is read in a lookahead and matched again by reference:
    # an atomic group (re has none before Python 3.11), so a long unterminated one is not backtracked over
    r"|\x1b[\]PX^_](?:(?=([^\x07\x1b\n]*))\1(?:\x07|\x1b\\))?"
    r"|\x1b[@-Z\\-_]"  # two-byte Fe escapes
)
# The 8-bit introducers (U+0080-U+009F) are removed one character at a time by _CONTROLS, their payload kept as
# plain text: UTF-8 read as Latin-1 is full of them ("\u201d" becomes "\xe2\x80\x9d", \x9d being 8-bit OSC and
# \x9c ST), and swallowing "to the terminator" would delete whole lines of real text. Without its introducer the
# payload is inert.
# Every Unicode format character (category Cf: bidi overrides and isolates, zero-width spaces, the soft hyphen,
# word joiners, BOM, interlinear annotations, and the tag characters that can carry text no one sees) except the
# zero-width joiner (emoji sequences) and non-joiner (Persian and Indic spelling: without it letters join that
# must not); terminals disagree on their widths, and none of them belongs in a metric.
_FORMAT_CHARS = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b\u200e-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
#: the format characters above as a regex character-class body (for escaping them where text must stay exact)
INVISIBLE = _FORMAT_CHARS
# + lone surrogates (no encoder takes them) and the line/paragraph separators (str.splitlines() breaks on them)
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f" + _FORMAT_CHARS + "\ud800-\udfff\u2028\u2029]")


def sanitize(text: str, *, keep_newlines: bool = False) -> str:
    """Make untrusted text inert for a terminal: strip escape sequences, controls and format characters.

    Tabs become a space; newlines become the visible "⏎" unless ``keep_newlines``. Markup characters are not
    touched here (they are plain text on stdout); the app renders through Rich ``Text`` objects, never markup.
    """
    if text.isascii() and text.isprintable():
        return text
    text = _ESC_SEQ.sub("", text)
    if keep_newlines:
        text = text.replace("\r\n", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
        parts = text.split("\n")
        text = "\n".join(_CONTROLS.sub(_control_repl, p) for p in parts)
    else:
        text = _CONTROLS.sub(_control_repl, text.replace("\r\n", "\n"))
    return _joiners(text) if "\u200d" in text else text


def _joiners(text: str) -> str:
    """``text`` without the zero-width joiners that join no two emoji (Unicode's rule GB11: an emoji, its selectors
    and modifiers, one joiner, an emoji). Anywhere else the cells of the character after one are disputed (Rich and
    wcwidth count it 0, a terminal 1 or 2): a key of them would shift every column after it."""
    out = []
    for i, ch in enumerate(text):
        if ch == "\u200d":
            j = i - 1
            while j >= 0 and (text[j] == "\ufe0f" or _SKIN_TONES[0] <= text[j] <= _SKIN_TONES[1]):
                j -= 1
            if j < 0 or i + 1 == len(text) or not (_pictographic(text[j]) and _pictographic(text[i + 1])):
                continue
        out.append(ch)
    return "".join(out)


#: every blank (no-break, em, ideographic spaces, the braille blank): Python's ``str.split`` splits at a no-break space
_GAP = re.compile("[\\s\u2800]")
_EDGES = re.compile("^[\\s\u2800]+|[\\s\u2800]+$")


def one_word(text: str) -> str:
    """``text`` (already sanitized) as one word: its edge blanks gone, every blank inside it a "_". A header or a
    text cell a reader splits on whitespace keeps its columns."""
    return _GAP.sub("_", _EDGES.sub("", text))


#: Unicode's Default_Ignorable_Code_Point: drawn as nothing (sanitize removes some; joiners, the grapheme joiner,
#: variation selectors and the Hangul fillers stay, and some of them do change the glyph)
IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def invisible(text: str) -> bool:
    """Does ``text`` (already sanitized) draw nothing a reader can see: empty, or blanks and characters that are
    drawn as nothing (ignorable, zero-width) only?"""
    return display_width(IGNORABLE.sub("", _GAP.sub("", text))) == 0


def key_name(key: str) -> str:
    """A key (a metric's name, untrusted) as the text that names it wherever it is shown: :func:`sanitize`'d; where
    that leaves no visible character (the empty key; blanks, tabs, zero-width or other invisible characters only;
    an escape sequence alone), its escaped form: the key in double quotes with every character that is not
    printable ASCII (and the space, the quote and the backslash) written as its escape, ``""``, ``"\\u200b"``,
    ``"\\x20"``, ``"\\t"``. That form is one word of printable ASCII, and no two such keys share one (a visible
    key spelled like one, ``""`` or ``"\\t"`` with its quotes, is shown as it is, and reads alike)."""
    text = sanitize(key)
    if not invisible(text):
        return text
    return '"' + "".join(_escaped(ch) for ch in key) + '"'


def _escaped(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    if ch != " " and ch.isascii() and ch.isprintable():
        return ch
    cp = ord(ch)
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


# "&" too: "&#8238;" is a character reference, the right-to-left override again once the markdown is rendered
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>!|~&])")
# "_" opens emphasis only at a word's edge ("__x__", "_x_"); inside a word ("hack_s") it is left as it is
_MD_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def md_escape(text: str) -> str:
    """Untrusted text as literal Markdown (a table cell, a label): made inert for a terminal, then every character
    that could open markup (a link or image, HTML, a character reference, emphasis, a cell break) is
    backslash-escaped."""
    return _MD_UNDERSCORE.sub(r"\\_", _MD_SPECIAL.sub(r"\\\1", sanitize(text)))


def _control_repl(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch == "\t":
        return " "
    if ch in "\n\u2028\u2029":
        return "⏎"
    if "\ud800" <= ch <= "\udfff":
        return "\ufffd"
    return ""


@lru_cache(maxsize=4096)
def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or ch in "\u200b\u200c\u200d\ufeff":
        return 0
    if "\u1160" <= ch <= "\u11ff" or "\ud7b0" <= ch <= "\ud7ff":
        return 0  # Hangul medial vowels and final consonants join the leading consonant's 2 cells (decomposed Korean)
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cf", "Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


_KEYCAP_BASES = "#*0123456789"  # the ASCII characters that have an emoji presentation ("1\ufe0f\u20e3")
# Ranges that hold the emoji a zero-width joiner can join (an approximation of Extended_Pictographic, which
# unicodedata does not expose): the symbol and pictograph blocks, arrows, technical and geometric symbols, dingbats.
_PICTOGRAPHIC = (
    (0x2190, 0x21FF),
    (0x2300, 0x23FF),
    (0x25A0, 0x27BF),
    (0x2B00, 0x2BFF),
    (0x1F000, 0x1FFFD),
)
_PICTOGRAPHIC_SINGLE = frozenset("\u00a9\u00ae\u203c\u2049\u2122\u2139\u24c2\u3030\u303d\u3297\u3299")
_SKIN_TONES = ("\U0001f3fb", "\U0001f3ff")  # emoji modifiers: they colour the emoji before them, no cells of their own
# the characters after which display_width must read in context instead of summing each character's width
_CONTEXTUAL = re.compile("[\u200d\ufe0f\U0001f3fb-\U0001f3ff]")


@lru_cache(maxsize=4096)
def _pictographic(ch: str) -> bool:
    cp = ord(ch)
    return ch in _PICTOGRAPHIC_SINGLE or any(lo <= cp <= hi for lo, hi in _PICTOGRAPHIC)


def char_cells(text: str) -> Iterator[tuple[str, int]]:
    """Each character with the cells it adds, in context (lazily: a cut stops reading where it stops).

    An emoji sequence counts as its first emoji: a zero-width joiner joins an emoji to the next emoji only
    (Unicode's rule GB11: "\U0001f468\u200d\U0001f4bb" is one glyph), so "e\u200de" stays two letters and a pad space
    after a stray joiner stays 1 cell; a skin-tone modifier after an emoji adds nothing; the emoji presentation
    selector U+FE0F widens a 1-cell symbol to 2 (as terminals draw "\u2764\ufe0f"), never a letter or a space."""
    prev: tuple[str, int] | None = None  # held back one character: a selector after it may widen it
    emoji = False  # the last base character (ignoring selectors, modifiers and joiners) was an emoji
    joined = False  # ... and a joiner followed it
    for ch in text:
        if ch == "\u200d":
            item, joined = (ch, 0), emoji
        elif ch == "\ufe0f":
            if prev is not None and prev[1] == 1 and (not prev[0].isascii() or prev[0] in _KEYCAP_BASES):
                prev = (prev[0], 2)
            item = (ch, 0)
        elif emoji and _SKIN_TONES[0] <= ch <= _SKIN_TONES[1]:
            item = (ch, 0)
        else:
            pict = not ch.isascii() and _pictographic(ch)
            item = (ch, 0 if joined and pict else _char_width(ch))
            emoji, joined = pict, False
        if prev is not None:
            yield prev
        prev = item
    if prev is not None:
        yield prev


def display_width(text: str) -> int:
    """Terminal cells taken by ``text`` (wide East Asian characters and emoji count 2, combining marks 0)."""
    if text.isascii():
        return len(text)
    if _CONTEXTUAL.search(text) is None:
        return sum(_char_width(ch) for ch in text)
    return sum(w for _, w in char_cells(text))


def cut(text: str, width: int) -> str:
    """Cut ``text`` to at most ``width`` display cells, ending in an ellipsis when something was dropped."""
    if display_width(text) <= width:
        return text
    if width <= 0:
        return ""
    if text.isascii() and text.isprintable():
        return text[: width - 1] + ELLIPSIS
    out: list[str] = []
    used = 0
    for ch, w in char_cells(text):
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    while out and out[-1] == "\u200d":  # no joiner left dangling before the ellipsis
        out.pop()
    return "".join(out) + ELLIPSIS


def pad(text: str, width: int, align: str = "right") -> str:
    """Pad ``text`` (already no wider than ``width``) to exactly ``width`` display cells."""
    gap = width - display_width(text)
    if gap <= 0:
        return text
    if align == "left":
        return text + " " * gap
    if align == "center":
        left = gap // 2
        return " " * left + text + " " * (gap - left)
    return " " * gap + text


def first_few(names: Sequence[str], n: int = 3) -> str:
    """``a, b, c and 4 more``: the first ``n`` of ``names`` (as given: sanitize them first), the rest counted."""
    more = f" and {len(names) - n} more" if len(names) > n else ""
    return ", ".join(names[:n]) + more


def cut_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its middle dropped for an ellipsis: the names of a sweep's runs differ
    at the end (``..._seed0``, ``..._seed1``) as often as at the start."""
    if display_width(text) <= width or width < 3:
        return cut(text, width)
    clusters: list[list[Any]] = []  # [text, cells]: a character and the zero-width ones joined to it
    for ch, w in char_cells(text):
        if w or not clusters:
            clusters.append([ch, w])
        else:  # a joiner, a variation selector, a combining mark, an emoji joined by them: part of the one before
            clusters[-1][0] += ch
    tail: list[str] = []
    used = 0
    for part, w in reversed(clusters):
        if used + w > (width - 1) // 2:
            break
        tail.append(part)
        used += w
    out = cut(text, width - used) + "".join(reversed(tail))
    return out if display_width(out) <= width else cut(text, width)
