"""Cell formatting: raw value + column format -> text of an exact display width.

Pure: no textual, torch or loguru. Everything that turns a number into characters lives here, so the stdout row,
`steptable tail` and the watch app show the same text for the same value.

Rules
- None (a key not logged in the row) -> blank; NaN (float or the strings "nan"/"NaN"/"null") -> ``NaN``;
  +/-inf -> ``inf`` / ``-inf``: a real non-finite value never reads as the filler of a sparse column.
- ``fmt=None`` on a float uses :func:`fmt_auto` (3 significant digits, no leading zero), its trailing zeros kept
  where they fit (:func:`fill_number`: .340 not .34); never more than 3 significant digits, whatever the width.
  Given the column's notation (steptable.table.notation), a number it holds is written in it instead, so that a
  column's values line up (``.0300`` over ``.0041``).
- ``fmt="frac"`` takes an ``(n, d)`` pair (tuple or JSON list) of real numbers -> ``n/d``.
- Bools show as ``T`` / ``F`` under the automatic format; an explicit spec formats them as ``format()`` does
  (``True`` under ``+.2f`` is ``+1.00``).
- A number that does not fit its column degrades to a shorter form (fewer digits, then an exponent); only when no
  form fits does the cell show ``#`` marks. Strings are cut with an ellipsis. Width is display width.
- Text from logs is untrusted: control characters, escape sequences and bidi overrides are made inert
  (steptable.table.cells, whose names this module re-exports: sanitize, display_width, cut, pad...).
"""

from __future__ import annotations

import math
import numbers
import operator
import re
from collections.abc import Callable, Container, Sequence
from typing import Any

from steptable.table.cells import ABSENT as ABSENT
from steptable.table.cells import (
    ELLIPSIS as ELLIPSIS,  # re-exported: the text half of formatting lives in steptable.table.cells
)
from steptable.table.cells import INVISIBLE as INVISIBLE
from steptable.table.cells import NAN as NAN
from steptable.table.cells import char_cells as char_cells
from steptable.table.cells import cut as cut
from steptable.table.cells import display_width as display_width
from steptable.table.cells import key_name as key_name
from steptable.table.cells import md_escape as md_escape
from steptable.table.cells import pad as pad
from steptable.table.cells import sanitize as sanitize
from steptable.table.notation import Notation, strip_zero

# ---------------------------------------------------------------------------------------------------------- numbers


def _exp(x: float, digits: int) -> str:
    """Compact exponent form: 3.1e-3, -1.2e5, 1e100 (no '+', no leading zeros in the exponent)."""
    mant, _, ex = f"{x:.{max(digits - 1, 0)}e}".partition("e")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(ex)}"


_EXP_TAIL = re.compile(r"([eE])([+-])0*(\d)")


def _compact_exponent(s: str) -> str:
    """'1.2e+03' -> '1.2e3', '3.0e-06' -> '3.0e-6': same value, fewer cells and tokens."""
    return _EXP_TAIL.sub(lambda m: m.group(1) + ("-" if m.group(2) == "-" else "") + m.group(3), s)


def fmt_auto(x: float, digits: int = 3) -> str:
    """Compact number: about ``digits`` significant digits, no leading zero, exponent only when needed.

    0.41234 -> .412, -0.0412 -> -.0412, 12.345 -> 12.3, 1234.5 -> 1234, 3.0 -> 3, 0.00031 -> .00031,
    123456.7 -> 123457, 123456789 -> 1.23e8, 3.1e-5 -> 3.1e-5, nan -> NaN, inf -> inf.

    Positional digits are preferred over an exponent between 1e-4 and 1e6 because they cost far fewer tokens at
    the same width (o200k: '.00031' is 2 tokens, '3.1e-4' is 6; '123457' is 2, '1.23e5' is 6). A column too
    narrow for them still gets the exponent form through :func:`fit_number`.
    """
    if x != x:
        return NAN
    if x in (math.inf, -math.inf):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    ax = abs(x)
    # (each bound as rounded to ``digits``: a float32 1e-4, 9.9999997e-05, reads .0001 as the float64 one does)
    if ax >= 999_999.5 or ax < reads_as(1e-4, digits):
        return _exp(x, digits)
    if ax >= 10 ** (digits - 1):
        # Enough integer digits: show the integer (1234 reads better than 1.23e3 for a step time).
        return str(round(x))
    # 1e-4 <= |x| < 10**(digits-1): "g" is positional here (its exponent, after rounding, is -4 .. digits-1) and
    # drops trailing zeros itself; one C-level conversion instead of a log10 and a second format
    return strip_zero(f"{x:.{digits}g}")


def reads_as(power: float, digits: int) -> float:
    """The least magnitude written as ``power`` (a power of ten) at ``digits`` significant digits: a band of forms
    that starts at ``power`` holds what rounds to it (9.9999997e-05, a float32 1e-4, at 3 digits)."""
    return power * (1 - 0.5 * 10.0**-digits)


def fmt_age(seconds: float) -> str:
    """Compact duration: 42s, 7.5m, 3.2h, 2.5d; "?" for an endless one (a clock of -inf in a log)."""
    s = max(0.0, seconds) if seconds == seconds else 0.0
    if s == math.inf:
        return "?"
    for unit, size, below in (("s", 1, 99.5), ("m", 60, 5997), ("h", 3600, 172800)):  # (99.6s: 1.66m, not 100s)
        if s < below:
            return f"{s:.0f}s" if unit == "s" else f"{fmt_auto(s / size)}{unit}"
    return f"{fmt_auto(s / 86400)}d"


def _positional(x: float, digits: int) -> str:
    """``x`` (non-zero, finite, 1e-4 <= |x| < 10**(digits-1)) to ``digits`` significant digits in positional form,
    trailing zeros kept and no leading zero: 0.34016 -> '.340'. A value that rounds up into the next decade keeps
    the count: 9.9996 at 4 digits is '10.00', not '10.000'; 99.96 at 3 is '100'."""
    s = f"{x:#.{digits}g}"  # "#": trailing zeros kept, and a bare point where none are left ('100.'), cut here
    return strip_zero(s[:-1] if s[-1] == "." else s)


def fit_number(x: float, width: int) -> str:
    """The most precise compact form of ``x`` that fits ``width`` cells, else ``#`` marks."""
    for digits in (3, 2, 1):
        s = fmt_auto(x, digits)
        if len(s) <= width:
            return s
    for digits in (3, 2, 1):  # the positional form is too wide at any precision: the exponent, as precise as fits
        s = _exp(x, digits)
        if len(s) <= width:
            return s
    # Drop the mantissa's sign-free digits: '1e100' at width 4 cannot be shown honestly.
    return "#" * width


#: The most significant digits a float in the automatic format shows, whatever its column's width.
FILL_DIGITS = 3


def fill_number(x: float, width: int) -> str:
    """:func:`fit_number`, with the trailing zeros of its 3 significant digits kept where they fit.

    The width is a maximum, not a target: a wide column never gets more than :data:`FILL_DIGITS` significant
    digits (a 5-cell column shows .340 for 0.34016, not .3402). The third digit is shown when it is a zero
    (.340: .34 would claim the value is 0.34), but never more digits than the value has (0.5 stays .5, a float32
    0.1 is .1, 9.99999999 is 10). Integers (3, 1234) and exponent forms are left as they are.
    """
    return fill_digits(x, fit_number(x, width), width)


def fill_digits(x: float, text: str, width: int) -> str:
    """``text`` (the fitted form of ``x``), or its :data:`FILL_DIGITS`-digit positional form with its trailing
    zeros where that fits ``width``."""
    if not (1e-4 <= abs(x) < 100.0) or x.is_integer():  # also false for nan and inf
        return text
    s = _positional(x, FILL_DIGITS)
    if abs(float(s) - x) <= 1e-7 * abs(x):
        # Exact at this precision (.5, 71.5), as far as a float32 metric or 0.1 + 0.2 can be: more zeros would
        # claim digits the value does not have.
        s = s.rstrip("0").rstrip(".")
    return s if len(text) < len(s) <= width else text


def auto_filled(x: float, width: int) -> str:
    """``fill_digits(x, fmt_auto(x), width)`` for a float ``x``, with one number format where the two take two: the
    automatic format of a number that is new every step (a gradient norm), on the compiled row's path."""
    if 1e-4 <= abs(x) < 100.0 and not x.is_integer():  # (false for nan and inf)
        s = f"{x:#.3g}"  # as _positional: trailing zeros kept, a bare point cut; fmt_auto's text is s without them
        if s[-1] == ".":
            s = s[:-1]
        if s[0] == "0":  # (strip_zero: "0.412" -> ".412"; 3 significant digits of |x| >= 1e-4 follow the point)
            s = s[1:]
        elif s[0] == "-" and s[1] == "0":
            s = "-" + s[2:]
        if s[-1] != "0":  # no trailing zero: both texts are s (the common case: one format, no parse)
            return s
        short = s.rstrip("0").rstrip(".") if "." in s else s
        if len(short) < len(s) <= width and abs(float(s) - x) > 1e-7 * abs(x):
            return s
        return short
    return fmt_auto(x)


def _non_finite(x: float) -> str | None:
    if x != x:
        return NAN
    if x == math.inf:
        return "inf"
    if x == -math.inf:
        return "-inf"
    return None


_NAN_STRINGS = frozenset({"nan", "NaN", "NAN", "null", "None", "-nan"})
_INF_STRINGS = {"inf": math.inf, "Infinity": math.inf, "+inf": math.inf, "-inf": -math.inf, "-Infinity": -math.inf}


def unique_name(name: str, taken: Container[str], alike: Callable[[str], str] | None = None) -> str:
    """``name``, or ``name~2``, ``name~3``... if it is taken: two keys that read alike stay two names. ``alike``:
    what two names are compared by (``taken`` holds that form: ``schemas.headers.look``, names that look the same)."""
    same = alike or str
    if same(name) not in taken:
        return name
    n = 2
    while same(f"{name}~{n}") in taken:
        n += 1
    return f"{name}~{n}"


def reads_zero(value: float, text: str) -> bool:
    """Whether ``text``, a fixed spec's form of ``value``, reads as zero where ``value`` is not (``+0.00`` for 3e-4
    at ``+.2f``, ``0.0%`` for 6e-5 at ``.1%``): the value's magnitude is written instead."""
    return value != 0 and text.lstrip("+-").rstrip("%").strip("0.") == ""


def numeric_pair(value: Any) -> bool:
    """An ``(n, d)`` pair of real numbers (tuple or JSON list): what the automatic format shows as ``n/d``. Any
    other list, a pair of words included, is shown as text."""
    return (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in value))


def _as_frac(value: Any) -> tuple[Any, Any] | None:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], value[1]
    return None


def _frac_part(v: Any, f: float) -> str:
    if not f.is_integer():
        return fmt_auto(f)
    try:
        return str(operator.index(v))  # exact, even past 2**53
    except TypeError:
        return str(int(f))


def _frac_text(value: Any, width: int) -> str:
    pair = _as_frac(value)
    if pair is None:
        return format_cell(value, None, width)
    n, d = pair
    if any(v is None or isinstance(v, (str, bytes)) for v in (n, d)):
        return NAN
    try:
        nf, df = float(n), float(d)  # any real number: ints, floats, bools (a count of one), numpy / torch scalars
    except (TypeError, ValueError, OverflowError):
        return NAN
    if nf != nf or df != df:
        return NAN
    s = f"{_frac_part(n, nf)}/{_frac_part(d, df)}"
    if len(s) <= width:
        return s
    # Too wide for n/d: the ratio says the same thing in fewer cells.
    if df == 0:
        return fit_number(nf, width) if nf == 0 else "#" * width
    return fit_number(nf / df, width)


def format_value(
    value: Any, fmt: str | None, width: int, *, fill: bool = True, notation: Notation | None = None
) -> str:
    """Text for one cell, at most ``width`` cells wide (not yet padded). Never raises.

    ``fill=False`` gives a float in the automatic format its natural 3-significant-digit text, without the trailing
    zeros :func:`fill_number` keeps where they fit: what a width is fitted to. ``notation`` (the column's, see
    steptable.table.notation) writes a number of the automatic format that it holds, and fits the width, in it.
    """
    try:
        if notation is not None and fmt is None:
            text = _noted(value, notation, width)
            if text is not None:
                return text
        text = _format_value(value, fmt, width, fill)
        # Columns narrower than 'nan' or '-inf': never overflow the column, whatever the token.
        return text if display_width(text) <= width else cut(text, width)
    except Exception:  # a hostile __format__ or __str__ must not break a training loop
        return "?" if width < 3 else cut("err", width)


def _noted(value: Any, notation: Notation, width: int) -> str | None:
    """``value`` in the column's notation, or None where it is not a number the notation holds in ``width``."""
    if type(value) is int and -(2**53) < value < 2**53:
        value = float(value)
    elif isinstance(value, float) and type(value) is not float:
        value = float(value)  # a subclass (numpy's float64) by its value
    if type(value) is not float or not notation.holds(value):
        return None
    text = notation.text(value)
    return text if len(text) <= width else None


def _format_value(value: Any, fmt: str | None, width: int, fill: bool = True) -> str:
    if value is None:
        return ABSENT
    if fmt == "frac":
        return _frac_text(value, width)
    if isinstance(value, bool):
        if fmt is None:
            return "T" if value else "F"
        value = int(value)  # under an explicit numeric spec a bool formats as Python's format() does: True -> 1
    if isinstance(value, str):
        if value in _NAN_STRINGS:
            return NAN
        if value in _INF_STRINGS:
            return "inf" if _INF_STRINGS[value] > 0 else "-inf"
        return cut(sanitize(value), width)
    if isinstance(value, int):
        if type(value) is not int:  # a subclass's own __str__/__format__ could print anything: take the number
            value = int.__int__(value)
        if value.bit_length() > 1000:  # never fits a column; str() of a 4300-digit int even raises
            try:
                return fit_number(float(value), width)
            except OverflowError:
                return "#" * width
        if fmt and fmt.endswith("d"):
            s = format(value, fmt)
        elif fmt:
            try:
                return _format_value(float(value), fmt, width)
            except OverflowError:
                return "#" * width
        else:
            s = str(value)
        if len(s) <= width:
            return s
        try:
            return fit_number(float(value), width)
        except OverflowError:
            return "#" * width
    if isinstance(value, float):
        if type(value) is not float:
            value = float(value)  # a subclass formats by its value (its own __format__ is not asked), as %-format does
        nf = _non_finite(value)
        if nf is not None:
            return nf
        if fmt is None:
            return fill_number(value, width) if fill else fit_number(value, width)
        if fmt.endswith("d"):
            if value.is_integer():
                s = format(int(value), fmt)
                return s if len(s) <= width else fit_number(value, width)
            return fit_number(value, width)
        s = _compact_exponent(format(value, fmt)) if fmt[-1:] in "eEgG" else format(value, fmt)
        if len(s) > width or reads_zero(value, s):
            # Too wide, or rounded to zero by a fixed spec (.2f of 3e-4): show the magnitude instead,
            # still in percent for a percent spec.
            if fmt.endswith("%") and width >= 2:
                fitted = fit_number(value * 100, width - 1) + "%"
            else:
                fitted = fit_number(value, width)
            if len(s) <= width and fitted.strip("#%") == "":
                return s  # no form shows the magnitude here: the spec's rounding beats a row of '#'
            return fitted
        return s
    if numeric_pair(value):
        return _frac_text(value, width)
    if isinstance(value, (bytes, bytearray)):
        return cut(sanitize(bytes(value).decode("utf-8", "replace")), width)
    if isinstance(value, Sequence):
        return cut(sanitize(str(list(value))), width)
    # numpy / torch scalars and anything else with __float__
    try:
        f = float(value)
    except (TypeError, ValueError):
        return cut(sanitize(str(value)), width)
    return _format_value(f, fmt, width, fill)


def format_cell(
    value: Any, fmt: str | None, width: int, align: str = "right", notation: Notation | None = None
) -> str:
    """One cell of exactly ``width`` display cells."""
    return pad(format_value(value, fmt, width, notation=notation), width, align)


def to_float(value: Any) -> float:
    """Best-effort numeric view of a raw value (fractions -> ratio, bools -> 0/1, junk -> nan). Never raises."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # an int past float range (JSON allows any number of digits)
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        if value in _INF_STRINGS:
            return _INF_STRINGS[value]
        try:
            return float(value)
        except ValueError:
            return math.nan
    pair = _as_frac(value)
    if pair is not None:
        n, d = (to_float(v) for v in pair)
        return n / d if d else math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
