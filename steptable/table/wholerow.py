"""The whole-row path of a compiled row: one ``%``-template formats every cell of a row in a single C call.

About 4x cheaper than a format per cell. The row's values go into it as they are: ``%``-formatting applies a fixed
spec to any real number exactly as ``format()`` does, so only "d" columns check the type (a float would be
truncated). Fractions and exponent cells are formatted first (memoised: n/32 and learning rates repeat); a float of
an automatic-format column is formatted first too, in its column's notation where it has one (a gradient norm is
new every step). The text is then checked: any error, a too-wide cell (the row's length changes), a non-finite
value of a fixed spec ("nan"/"inf", fixed up in place) or a fixed spec that rounded a value to zero (redone by the
per-cell path, which shows its magnitude) is caught, and the per-cell path renders that row instead.

:func:`source` gives the generated function's text and :func:`names` the globals it needs, for
steptable.table.render.compile_row; both are pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

from steptable.table.columns import Col
from steptable.table.formatting import _compact_exponent, auto_filled, format_cell
from steptable.table.notation import Notation

SAFE_SPEC = re.compile(r"([+\- ]?)(\.[0-9]{1,2})?([fFde%])")


def aligned(fmt: str, width: int) -> str:
    """'+.2f' at width 6 -> '>+6.2f' (align, sign, width, precision, type: the order format specs require)."""
    m = SAFE_SPEC.fullmatch(fmt)
    assert m is not None
    sign, prec, kind = m.group(1), m.group(2) or "", m.group(3)
    return f">{sign}{width}{prec}{kind}"


def kind(c: Col) -> str | None:
    """How column ``c`` enters the template ("int", "float", "frac", "exp", "auto", "note"); None: it cannot, and
    its rows take the per-cell path."""
    if c.align != "right":
        return None
    if c.fmt is None:
        return "auto" if c.notation is None else "note"
    if c.fmt == "frac":
        return "frac"
    m = SAFE_SPEC.fullmatch(c.fmt)
    if m is None or m.group(3) in "%F" or m.group(1) == "-" or (m.group(3) != "d" and m.group(2) == ".0"):
        # '%' scales by 100, which a %-template cannot; 'F' prints NAN/INF; a '-' sign is a left-justify flag in a
        # %-template; ".0f" can round a value to a bare "0" that the zero check below cannot tell from a true zero:
        # all go the per-cell way.
        return None
    return {"d": "int", "e": "exp"}.get(m.group(3), "float")


def _zero_check(cols: tuple[Col, ...], sep: str) -> str:
    """Generated condition that is true when some fixed-spec cell reads as zero ("+0.00"), so the per-cell path
    can tell a true zero from a value rounded away. Plain substring tests (a regex costs several times more); a
    false alarm ("10.00", an automatic-format cell) only costs the slower path."""
    needles = sorted({"0." + "0" * int((m.group(2) or ".6")[1:]) for c in cols if kind(c) == "float"
                      for m in [SAFE_SPEC.fullmatch(c.fmt or "")] if m is not None})
    tests = [f"{(n + sep)!r} in text" for n in needles]
    if cols and kind(cols[-1]) == "float":  # the last cell has no separator after it
        tests += [f"text.endswith({n!r})" for n in needles]
    return " or ".join(tests) or "False"


def _template(cols: tuple[Col, ...], sep: str) -> str:
    parts = []
    for c in cols:
        k = kind(c)
        if k in ("frac", "exp", "auto", "note"):
            parts.append(f"%{c.width}s")
        elif k is not None and c.fmt is not None:
            parts.append("%" + aligned(c.fmt, c.width)[1:])
    return sep.join(parts)


#: Python's two-digit exponent suffix -> the compact one the per-cell path writes ('e+05' -> 'e5', 'e-06' -> 'e-6'),
#: tabulated once from formatting's own rule. A three-digit exponent or a non-finite value has no entry: the
#: KeyError sends the row to the per-cell path.
EXP_SUFFIX = {s: _compact_exponent(s) for s in (f"e{sign}{n:02d}" for sign in "+-" for n in range(100))}


MEMO_SIZE = 4096  # texts remembered per column (fractions of a fixed batch size, a learning-rate schedule)


def frac_new(memo: dict[Any, str], v: Any) -> str | None:
    """The text of an (int, int) fraction, remembered (bounded); None for anything else (per-cell path)."""
    if type(v) is not tuple or len(v) != 2 or type(v[0]) is not int or type(v[1]) is not int:
        return None
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    text = memo[v] = f"{v[0]}/{v[1]}"
    return text


def _keys_getter(cols: tuple[Col, ...]) -> Callable[[Mapping[str, Any]], Any]:
    """All of a row's values in one C call, as a tuple; a missing key raises KeyError (the per-cell path renders
    it blank)."""
    keys = tuple(c.key for c in cols)
    if not keys:
        return lambda values: ()
    if len(keys) == 1:
        one = itemgetter(keys[0])
        return lambda values: (one(values),)
    return itemgetter(*keys)


def names(cols: tuple[Col, ...], sep: str) -> dict[str, Any]:
    """The globals :func:`source`'s code reads (beside ``render_row``, the per-cell renderer, and
    ``WIDTH``)."""
    env: dict[str, Any] = {
        "KEYS": tuple(c.key for c in cols), "KEYS_GET": _keys_getter(cols), "TEMPLATE": _template(cols, sep),
        "frac_new": frac_new, "EXP_SUFFIX": EXP_SUFFIX, "auto_filled": auto_filled, "cell": format_cell,
    }
    for i, c in enumerate(cols):
        env[f"MEMO{i}"] = {}
        if c.notation is not None:
            env[f"NOTE{i}"], env[f"HOLDS{i}"], env[f"TOP{i}"] = c.notation.text, c.notation.holds, c.notation.top
            env[f"HALF{i}"] = c.notation.half()
            env[f"NOTATION{i}"] = c.notation
    return env


def held(i: int, n: Notation, v: str) -> str:
    """Code true where column ``i``'s notation ``n`` holds the float named ``v`` (:meth:`Notation.holds`, with the
    names of :func:`names`): its bounds inline where they are all of it (fixed decimals, not exact), else the
    method."""
    if n.exact or n.decimals == 0 or n.exp is not None:
        return f"-TOP{i} < {v} < TOP{i} and HOLDS{i}({v})"
    # (a magnitude at or below the half would read as zero digits, '.0000': written on its own)
    return f"(HALF{i} < {v} < TOP{i} or -TOP{i} < {v} < -HALF{i} or {v} == 0)"


def source(cols: tuple[Col, ...], sep: str) -> list[str]:
    """Source of ``render_fast``, or nothing when some column cannot take the whole-row path."""
    kinds = [kind(c) for c in cols]
    if not cols or any(k is None for k in kinds):
        return []
    vs = [f"v{i}" for i in range(len(cols))]
    args = list(vs)
    # Only a plain dict: itemgetter on a defaultdict would insert the missing keys its factory makes up, where the
    # per-cell path (values.get) shows them blank.
    lines = ["def render_fast(values):", "    if type(values) is not dict: return render_row(values)", "    try:"]
    unpack = f"{', '.join(vs)}{',' if len(vs) == 1 else ''}"
    lines += [
        "        try:",
        f"            {unpack} = KEYS_GET(values)",
        "        except KeyError:",  # a key this row does not log (an evaluation's, between evaluations)
        f"            {unpack} = map(values.get, KEYS)",
    ]
    ints = [f"type(v{i}) is not int" for i, k in enumerate(kinds) if k == "int"]
    # an automatic-format cell takes floats (and None: blank) only: an int, a string, a tensor... go the per-cell way
    floats = [f"(type(v{i}) is not float and v{i} is not None)" for i, k in enumerate(kinds) if k in ("auto", "note")]
    if ints or floats:
        lines.append(f"        if {' or '.join(ints + floats)}: return render_row(values)")
    for i, (c, k) in enumerate(zip(cols, kinds, strict=True)):
        if k == "frac":
            lines += [
                f"        t{i} = MEMO{i}.get(v{i})",  # an unhashable value raises TypeError: per-cell path
                f"        if t{i} is None:",
                f"            t{i} = frac_new(MEMO{i}, v{i})",
                f"            if t{i} is None: return render_row(values)",
            ]
            args[i] = f"t{i}"
        elif k == "exp":
            m = SAFE_SPEC.fullmatch(c.fmt or "")
            assert m is not None
            spec = f"%{m.group(1)}{m.group(2) or ''}e"  # '+.1e' -> '%+.1e' (the template pads the text)
            lines += [  # inline: a gradient norm is new every step, so this miss is the common case
                f"        t{i} = MEMO{i}.get(v{i})",
                f"        if t{i} is None:",
                f"            s = {spec!r} % (v{i},)",  # a bare % would unpack a 1-tuple cell: (3e-4,) -> 3.0e-4
                f"            t{i} = s[:-4] + EXP_SUFFIX[s[-4:]]",
                f"            if v{i}:",  # not 0.0: -0.0 == 0.0 as a key, but its text has a sign
                f"                if len(MEMO{i}) >= {MEMO_SIZE}: MEMO{i}.clear()",
                f"                MEMO{i}[v{i}] = t{i}",
            ]
            args[i] = f"t{i}"
        elif k == "auto":
            # as the per-cell path: the 3-digit form, filled where it is narrower than the column; a wider one
            # lengthens the row (checked below)
            lines.append(f"        t{i} = '' if v{i} is None else auto_filled(v{i}, {c.width})")
            args[i] = f"t{i}"
        elif k == "note":
            n = c.notation
            assert n is not None
            lines += [  # a float the notation does not hold (NaN, a spike) is written as the per-cell path does
                f"        t{i} = '' if v{i} is None else NOTE{i}(v{i}) if {held(i, n, f'v{i}')} else "
                f"cell(v{i}, None, {c.width}, 'right', NOTATION{i})",
            ]
            args[i] = f"t{i}"
    lines += [
        f"        text = TEMPLATE % ({', '.join(args)},)",
        "    except Exception:",  # wrong type, unhashable, overflow, an int past str()'s digit limit, nan exponent
        "        return render_row(values)",
        f"    if len(text) != WIDTH or {_zero_check(cols, sep)}:",
        "        return render_row(values)",
    ]
    if any(k == "float" for k in kinds):
        # '%6.2f' prints nan as 'nan', '%+6.2f' as '+nan' and inf as '+inf' (never '-nan'); the per-cell path
        # prints 'NaN' / 'inf'. (No automatic-format text has a lowercase 'nan' or a '+inf' in it.)
        lines += [
            "    if 'n' in text:",  # a one-character search is a memchr: much cheaper than a replace
            "        text = text.replace('+nan', ' NaN').replace('nan', 'NaN')",
            "        if '+inf' in text: text = text.replace('+inf', ' inf')",
        ]
    lines.append("    return text")
    return lines
