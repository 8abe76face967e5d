"""Headers for columns narrower than their header (StepLogger's console prints a column as narrow as its values):
readable short forms first (``clm`` for ``completion_len_max``, ``m10`` for ``metric_10``, ``smin`` for
``score/min``), chosen for all the narrow columns together so that no two read alike and a form that would not say
which of two keys it stands for goes to neither. Pure."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence

from steptable.schemas.headers import look, safe_word, short_header, suffixed
from steptable.table.formatting import display_width

#: words split apart for an abbreviation: ``completion_len_max``, ``train/pg-loss``, ``gradNorm``, ``metric_10``
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^\W\d_]+")
#: letters a one-word abbreviation keeps (``entropy`` -> ``ent``, ``accuracy`` -> ``acc``)
_PREFIX = 3


def _initials(words: list[str], whole: int = -1) -> str:
    """The first letter of each word (lower case), a number whole (``metric_10`` -> ``m10``, not ``m1``, which is
    ``metric_1``'s), and the word at ``whole`` whole too (``score/min`` -> ``smin``)."""
    return "".join(w if w.isdigit() or i == whole else w[0].lower() for i, w in enumerate(words))


def _forms(header: str) -> list[str]:
    """Readable short forms of ``header``, best first, of any width: the header, its short header (``train/loss`` ->
    ``loss``); the initials of either (``clm``), first those up to a number before the last word (``layer_10/gnorm``
    -> ``l10``, then ``l10g``), or a one-word header's first letters (``ent``); the initials with one word whole, the
    last first (``smin``; ``minl`` for ``min_length``: the word that tells siblings apart)."""
    safe = safe_word(header)
    short = short_header(safe)
    splits = [ws for ws in (_WORDS.findall(t) for t in dict.fromkeys((short, safe))) if ws]
    out = [safe, short]
    for ws in (ws for ws in splits if len(ws) > 1):
        if (at := max((j for j, w in enumerate(ws) if w.isdigit()), default=len(ws) - 1)) < len(ws) - 1:
            out.append(_initials(ws[: at + 1]))
        out.append(_initials(ws))
    out += [ws[0][:_PREFIX] for ws in splits if len(ws) == 1]
    for ws in (ws for ws in splits if len(ws) > 1):
        out += [_initials(ws, j) for j in reversed(range(len(ws))) if not ws[j].isdigit()]
    return list(dict.fromkeys(f for f in out if f))


def _fitted(header: str, room: int) -> Iterator[tuple[str, bool]]:
    """(abbreviation, readable) of ``header`` for ``room`` cells, best first: its readable forms that fit, then those
    one cell wider (the column widens by a cell: ``smax`` over 3-cell values, beside ``smin``), then the header cut
    (``metr``: it may no longer tell the key apart)."""
    forms = _forms(header)
    yield from ((f, True) for f in forms if display_width(f) <= room)
    yield from ((f, True) for f in forms if display_width(f) == room + 1)
    safe = safe_word(header)
    yield from ((safe[:n], False) for n in range(room, 0, -1) if display_width(safe[:n]) <= room)


def abbreviate(header: str, room: int, taken: Collection[str] = ()) -> str:
    """A header for a column narrower than ``header``: :func:`abbreviations` of it alone."""
    return abbreviations([(header, room)], taken)[0]


def abbreviations(wanted: Sequence[tuple[str, int]], taken: Collection[str] = ()) -> list[str]:
    """A header for each (header, room) of ``wanted`` (columns narrower than their headers), none two alike nor
    any whose :func:`look` is in ``taken``: at most ``room`` cells where a readable form fits (:func:`_forms`: the
    header, its short header, initials, initials with one word whole), one wider where only that is readable, else
    the header cut; else with a ``~N`` counter (which may be wider: two columns must not read alike).

    A form two headers want goes to neither (``sm`` would not say which of ``score/max``, ``score/min``: ``smax``,
    ``smin``), unless it is the last readable form (or the last at all) of one: the first such gets it.
    """
    used = set(taken)
    gens = [_fitted(h, max(room, 1)) for h, room in wanted]
    cands: list[list[tuple[str, str, bool]]] = [[] for _ in wanted]  # (abbreviation, its look, readable)

    def cand(i: int, j: int) -> tuple[str, str, bool] | None:
        while len(cands[i]) <= j:
            if (c := next(gens[i], None)) is None:
                return None
            if (alike := look(c[0])) not in {s for _, s, _ in cands[i]}:
                cands[i].append((c[0], alike, c[1]))
        return cands[i][j]

    def last(i: int, readable: bool) -> bool:
        after = cand(i, pick[i] + 1)
        return after is None or (readable and not after[2])

    out: dict[int, str] = {}
    pick = [0] * len(wanted)
    pending = list(range(len(wanted)))
    while pending:
        want: dict[str, list[tuple[int, str, bool]]] = {}  # look -> (column, its abbreviation of that look)
        for i in pending:
            while (c := cand(i, pick[i])) is not None and c[1] in used:
                pick[i] += 1
            if c is not None:
                want.setdefault(c[1], []).append((i, c[0], c[2]))
        if not want:
            break
        for alike, ics in want.items():
            ends = ics if len(ics) == 1 else [ic for ic in ics if last(ic[0], ic[2])]
            for i, a, _ in ics:
                if ends and i == ends[0][0]:
                    out[i] = a
                    used.add(alike)
                else:
                    pick[i] += 1
        pending = [i for i in pending if i not in out]
    for i in pending:  # nothing left that reads apart: a counter on its first short form
        safe = safe_word(wanted[i][0])
        out[i] = suffixed(next((f for f in _forms(safe) if f not in (safe, short_header(safe))), safe), used)
        used.add(look(out[i]))
    return [out[i] for i in range(len(wanted))]
