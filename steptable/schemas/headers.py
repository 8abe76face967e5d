"""Short, unambiguous column headers for metric keys that no schema declares. Pure.

Trainers name metrics by path (``actor/pg_loss``, ``env/all/reward/total``, ``timing_s/gen``). A header keeps the
tail of the path that still tells the key apart from every other key on screen:

1. Split the key on ``/``. A trailing ``mean`` or ``total`` is dropped: it is the natural reading of a batch
   statistic (``critic/score/mean`` -> ``score``, ``response_length/mean`` -> ``resp_len``); a trailing ``mean@N``
   joins the name before it (``val-core/src/reward/mean@4`` -> ``val/reward@4``).
2. A leading namespace whose tail means nothing alone stays as a short lead (``timing_s/gen`` -> ``t/gen``,
   ``timing_per_token_ms/gen`` -> ``tpt/gen``, ``val/test_score/gsm8k`` -> ``val/gsm8k``, ``eval/loss`` ->
   ``eval/loss``). An evaluation marker fused to the first segment reads as that lead (TRL's
   ``eval_completions/mean_length`` -> ``eval/mean_length``, as ``eval/completions/mean_length``; a flat
   ``eval_loss`` keeps its own marker). A namespace whose tail names only a statistic stays behind that lead
   (``eval_clip_ratio/high_max`` -> ``eval/clip/high_max``). Namespaces that only group (``env``, ``all``,
   ``train``, ``perf``) are skipped, also in front of a lead (verl's ``perf/mfu/ref`` -> ``mfu/ref``, not ``ref``).
3. Start from the last segment (with the name before trailing statistics: ``critic/score/max`` -> ``score/max``,
   ``val-core/src/acc/best@4/std`` -> ``val/acc/best@4/std``; before an index: ``layers/grad/3`` -> ``grad/3``, as a
   bare ``3`` over a column of numbers reads as a value; and before a data split, which names no metric:
   ``add_scalars`` curves ``loss/train``, ``loss/val`` -> ``loss``, ``loss/val``), and give every key that still
   shares a header one more segment, until all headers differ (``critic/rewards/max`` vs ``critic/score/max``;
   ``test/env/all/reward/total`` -> ``test/reward``).
4. Long words get a fixed abbreviation (``response_length`` -> ``resp_len``, ``grad_norm`` -> ``gnorm``).
5. Keys come from files and are untrusted: headers are made terminal-safe and at most ``MAX_HEADER`` cells wide.
   Only headers that already differ in full are fitted, keeping the distinguishing tail: a verl validation lead
   goes first (``val-aux/src/reward/worst@2/std`` -> ``reward/worst@2/std``: ``@2`` says validation), then the
   names before the statistic are cut to a share each (``gs…/re…/best@2/std`` beside ``MA…/re…/best@2/std``),
   then the name itself (keeping a short ``/max``, ``:count`` or ``@4`` ending). A cut header that two keys would
   share goes to neither; whatever still collides (or collides with a declared header) gets the full key, then a
   ``~N`` suffix.
6. Headers collide when they look alike, not only when they are equal: invisible characters (joiners, variation
   selectors, tag characters...), composed vs decomposed accents (``café`` twice) and blanks other than the space
   make different keys that read the same, so they get ``~N`` too. A joiner inside an emoji sequence and a selector
   that widens a symbol to emoji change what is drawn and count. Homoglyphs (Cyrillic ``ѕ`` for ``s``) are left
   apart: telling them needs Unicode's confusables table.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import cache

from steptable.table.cells import IGNORABLE, cut_middle, invisible, key_name, one_word
from steptable.table.formatting import char_cells, cut, display_width, sanitize

#: widest automatic header, in cells
MAX_HEADER = 18

#: trailing segments that are the default reading of a batch statistic
_DROP_LAST = frozenset({"mean", "total", "avg"})

#: segments that only group metrics; they never appear in a header
_NOISE = frozenset({"env", "all", "train", "data", "perf"})

#: leading namespaces kept (abbreviated) in front of the tail, because the tail alone would mislead
_LEADS = {
    "timing_s": "t",
    "timing_per_token_ms": "tpt",
    "time": "t",
    "val": "val",
    "val-core": "val",
    "val-aux": "vaux",
    "eval": "eval",
    "test": "test",
    "clip_ratio": "clip",
    "completions": "compl",
    "mfu": "mfu",
}
#: leading namespaces kept behind an evaluation lead too: their tails name only a statistic (TRL's
#: ``eval_clip_ratio/high_max`` -> ``eval/clip/high_max``; ``eval/high_max`` read as some unknown eval metric)
_KEPT_BEHIND_LEAD = frozenset({"clip_ratio"})

_ABBREV = {
    "response_length": "resp_len",
    "prompt_length": "prompt_len",
    "learning_rate": "lr",
    "grad_norm": "gnorm",
    "advantages": "adv",
    "completions": "compl",
    "throughput": "thru",
    "clip_ratio": "clip",
}

_STAT = re.compile(r"^(max|min|std|var|sum|count|median|p\d+|clip_ratio|dl\d+|(mean|std|best|worst|maj)@\d+.*"
                   r"|(?i:val|valid|validation|test|eval)|[0-9]+)$")  # an index (layers/grad/3) names no metric
#: Lightning's metric of one of several dataloaders: it reads as a statistic of the name before it
_DATALOADER = re.compile(r"^dataloader_idx_(\d+)$")
_MEAN_AT = re.compile(r"^mean(@\d+)$")
#: a statistic over n sampled answers per prompt (verl's validation: mean@4, best@2/std): it reads as validation
#: without a lead
_VAL_STAT = re.compile(r"^(mean|std|best|worst|maj)@\d+$")
#: an evaluation marker fused to the first segment (TRL's eval_completions/mean_length = eval/completions/...)
_EVAL_FUSED = re.compile(r"^(eval|val|test)_(.+)$")
#: a short last part kept whole when a long header is cut: "/max", ":count", "@4"
_TAIL = re.compile(r"^(.+?)([/:@][^/:@]{1,8})$")


def _parts(key: str) -> tuple[str | None, list[str]]:
    """(lead, segments) of a key, before abbreviation."""
    if invisible(sanitize(key)):  # nothing a reader sees: named by its escapes (steptable.table.cells.key_name)
        return None, [key_name(key)]
    segs = [s for s in key.split("/") if s]
    if not segs:
        return None, [key or "?"]
    if len(segs) > 1 and (m := _EVAL_FUSED.match(segs[0])):
        segs = [m.group(1), m.group(2), *segs[1:]]
    if len(segs) > 1 and segs[-1] in _DROP_LAST:
        segs = segs[:-1]
    if len(segs) > 1 and (m := _MEAN_AT.match(segs[-1])):  # reward/mean@4 -> reward@4
        segs = [*segs[:-2], segs[-2] + m.group(1)]
    if len(segs) > 1 and (m := _DATALOADER.match(segs[-1])):  # Lightning: val_loss/dataloader_idx_0 -> .../dl0
        segs = [*segs[:-1], f"dl{m.group(1)}"]
    while len(segs) > 2 and segs[0] in _NOISE:  # a lead behind a grouping namespace (verl's perf/mfu/ref -> mfu/ref)
        segs = segs[1:]
    lead = None
    if len(segs) > 1 and segs[0] in _LEADS:
        lead = _LEADS[segs[0]]
        segs = segs[1:]
        if len(segs) > 1 and segs[0] in _KEPT_BEHIND_LEAD:
            lead, segs = f"{lead}/{_LEADS[segs[0]]}", segs[1:]
    kept = [s for s in segs if s not in _NOISE]
    return lead, kept if any(not s.isdigit() for s in kept) else segs  # (an index alone reads as a value)


def _min_depth(segs: list[str]) -> int:
    """The last segment, and the name before trailing statistics (``score/max``, ``acc/best@4/std``)."""
    n = 1
    while n < len(segs) and _STAT.match(segs[-n]):
        n += 1
    return n


def _render(lead: str | None, segs: list[str], depth: int) -> str:
    tail = "/".join(_ABBREV.get(s, s) for s in segs[-depth:])
    return f"{lead}/{tail}" if lead else tail


def clean(text: str) -> str:
    """A header made safe for a terminal and for a one-line table: no controls, no spaces, bounded width."""
    t = safe_word(text)
    if display_width(t) <= MAX_HEADER:
        return t
    m = _TAIL.match(t)
    if m and display_width(m.group(2)) <= MAX_HEADER // 2:  # "/high_max" too: 8 letters, as _TAIL allows
        return cut(m.group(1), MAX_HEADER - display_width(m.group(2))) + m.group(2)
    return cut(t, MAX_HEADER)


def short_header(key: str) -> str:
    """The header of ``key`` shown alone (no other key to tell it apart from)."""
    return short_headers([key])[key]


def safe_word(text: str) -> str:
    """``text`` made inert and one word (no blanks); ``?`` where nothing is left."""
    return one_word(sanitize(text)) or "?"


#: characters drawn as a blank (no-break, en, ideographic... spaces; the braille blank): read as spaces, cell for cell
_BLANK = re.compile("[^\\S ]|\u2800")


def look(h: str) -> str:
    """What ``h`` looks like on a terminal: the text two headers are told apart by (NFC, invisible characters out)."""
    if h.isascii() and h.isprintable():  # nothing invisible, no blank but the space: only the edges go, as below
        return h.strip()
    if "\u200d" in h or "\ufe0f" in h:  # the only ones that can change a glyph: read in context
        cells = list(char_cells(h))
        h = "".join(ch for i, (ch, _) in enumerate(cells) if IGNORABLE.match(ch) is None or _drawn(cells, i))
    else:
        h = IGNORABLE.sub("", h)
    return unicodedata.normalize("NFC", _BLANK.sub(_spaces, h)).strip()


def _spaces(m: re.Match[str]) -> str:
    return " " * display_width(m.group())


def _drawn(cells: list[tuple[str, int]], i: int) -> bool:
    """Whether the ignorable ``cells[i]`` changes what is drawn: a joiner that makes the emoji after it part of one
    glyph (it then takes no cells of its own), an emoji selector that widened the symbol before it to 2 cells."""
    ch = cells[i][0]
    if ch == "\u200d" and i + 1 < len(cells):
        after, cells_after = cells[i + 1]
        return cells_after == 0 and display_width(after) > 0
    if ch == "\ufe0f" and i > 0:
        before, cells_before = cells[i - 1]
        return cells_before == 2 and display_width(before) == 1
    return False


def suffixed(h: str, seen: Collection[str]) -> str:
    """``h`` with the first free ``~N`` counter, cut to keep within ``MAX_HEADER``; ``seen`` holds looks."""
    n = 2
    while True:
        suffix = f"~{n}"
        room = MAX_HEADER - len(suffix)
        cand = (cut(h, room) if display_width(h) > room else h) + suffix
        if look(cand) not in seen:
            return cand
        n += 1


def short_headers(keys: Iterable[str], reserved: Collection[str] = ()) -> dict[str, str]:
    """A distinct header for each key, none equal to a ``reserved`` header (those of declared columns).

    First every key grows by segments until its whole header differs from the others' (the distinguishing tail);
    only then are headers fitted to ``MAX_HEADER``, so that a cut never sends a key back to grow the shared middle.
    Headers are compared by :func:`look`: two that differ only in what is not drawn collide.
    """
    order, parts, depth, seen_as, taken, out, pending = _grown(keys, reserved)
    used = {seen_as(h) for h in out.values()} | taken  # looks, not headers
    gens = {k: _candidates(k, parts[k], depth[k]) for k in pending}  # lazy: most keys take their first
    cands: dict[str, list[tuple[str, str]]] = {k: [] for k in pending}  # (header, its look), no two alike

    def cand(k: str, i: int) -> tuple[str, str] | None:
        while len(cands[k]) <= i:
            if (c := next(gens[k], None)) is None:
                return None
            if (alike := seen_as(c)) not in {s for _, s in cands[k]}:
                cands[k].append((c, alike))
        return cands[k][i]

    pick = {k: 0 for k in pending}
    while pending:
        want: dict[str, list[tuple[str, str]]] = {}  # look -> (key, its header of that look)
        for k in pending:
            while (c := cand(k, pick[k])) is not None and c[1] in used:
                pick[k] += 1
            if c is not None:
                want.setdefault(c[1], []).append((k, c[0]))
        if not want:
            break
        for seen, kcs in want.items():
            # a header two keys want goes to neither (it would not say which), unless it is one's last resort
            last = kcs if len(kcs) == 1 else [kc for kc in kcs if cand(kc[0], pick[kc[0]] + 1) is None]
            winner = last[0][0] if last else None
            for k, h in kcs:
                if k == winner:
                    out[k] = h
                    used.add(seen)
                else:
                    pick[k] += 1
        pending = [k for k in pending if k not in out]
    for k in pending:  # nothing left that differs: a counter on the header it would have had
        out[k] = suffixed((cand(k, 0) or ("?", ""))[0], used)
        used.add(seen_as(out[k]))
    return {k: out[k] for k in order}


def order_free(keys: Iterable[str], reserved: Collection[str] = ()) -> bool:
    """The headers :func:`short_headers` gives do not depend on the order of ``keys``: the keys its first pass
    leaves over (a grown header shared, reserved or too wide; they are headed first come, first served) want no
    header in common (one with every candidate taken is numbered on its first: ``kl~2``). A reader that ranks keys by
    values it does not hold may head them in a guessed order then."""
    _, parts, depth, seen_as, _, _, pending = _grown(keys, reserved)
    wanted: set[str] = set()
    for k in pending:
        looks = {seen_as(c) for c in _candidates(k, parts[k], depth[k])}
        if not looks or looks & wanted:  # (none: a "?~N" header, numbered in order)
            return False
        wanted |= looks
    return True


def _grown(keys: Iterable[str], reserved: Collection[str]) -> tuple[
        list[str], dict[str, tuple[str | None, list[str]]], dict[str, int], Callable[[str], str], set[str],
        dict[str, str], list[str]]:
    """The first pass of :func:`short_headers`: every key grown by segments until its whole header differs from the
    others' and from ``reserved``; (keys in order, their parts, depths, the look of a header (cached), the reserved
    looks, the keys headed by their grown tail -> that header, the keys left over in order)."""
    order = list(dict.fromkeys(keys))
    parts = {k: _parts(k) for k in order}
    depth = {k: min(_min_depth(parts[k][1]), len(parts[k][1])) for k in order}
    seen_as = cache(look)  # the same few headers are looked at again in every round; dropped with the call
    taken = {seen_as(r.strip()) for r in reserved}

    def whole(k: str) -> str:
        lead, segs = parts[k]
        return safe_word(_render(lead, segs, depth[k]))

    for _ in range(64):  # each round grows at least one key; paths are short
        by_header: dict[str, list[str]] = {}
        for k in order:
            by_header.setdefault(seen_as(whole(k)), []).append(k)
        grew = False
        for h, ks in by_header.items():
            if len(ks) > 1 or h in taken:
                for k in ks:
                    if depth[k] < len(parts[k][1]):
                        depth[k] += 1
                        grew = True
        if not grew:
            break
    looks = {k: seen_as(whole(k)) for k in order}
    count: dict[str, int] = {}
    for k in order:
        count[looks[k]] = count.get(looks[k], 0) + 1
    out: dict[str, str] = {}
    pending: list[str] = []
    for k in order:
        h = whole(k)
        if count[looks[k]] == 1 and looks[k] not in taken and display_width(h) <= MAX_HEADER:
            out[k] = h
        else:
            pending.append(k)
    return order, parts, depth, seen_as, taken, out, pending


def _candidates(key: str, parts: tuple[str | None, list[str]], depth: int) -> Iterator[str]:
    """Headers for a key whose grown header is too wide or still shared, best first, each within ``MAX_HEADER``.

    The grown tail is what tells the key apart, so it is kept before anything else: a lead is dropped only where
    the tail names a validation statistic itself (``reward/worst@2/std``), and cuts keep the header's start and
    end before the key's own text (whose start is often a shared data-source path) is tried.
    """
    lead, segs = parts
    whole = safe_word(_render(lead, segs, depth))
    if display_width(whole) <= MAX_HEADER:
        yield whole
    tail = safe_word(_render(None, segs, depth))
    bare = bool(lead) and any(_VAL_STAT.match(s) for s in key.split("/"))  # the lead may go
    if bare and display_width(tail) <= MAX_HEADER:
        yield tail
    names = [safe_word(_ABBREV.get(s, s)) for s in segs[-depth:]]
    for keep in range(min(_min_depth(segs), len(names)), 0, -1):  # the name before statistics may be cut too
        if squeezed := _squeeze(None if bare or not lead else safe_word(lead), names, keep):
            yield squeezed
    yield clean(whole)
    yield from (clean(safe_word(_render(lead, segs, d))) for d in range(depth + 1, len(segs) + 1))
    yield cut_middle(whole, MAX_HEADER)
    yield clean(key)


def _squeeze(lead: str | None, names: list[str], keep: int) -> str | None:
    """``lead`` and ``names`` joined by ``/`` in ``MAX_HEADER`` cells: the lead and the last ``keep`` names whole, the
    names between cut to a fair share each (``gs…/rew…/best@2/std``); None where the whole parts alone do not fit."""
    keep = min(keep, len(names))
    head, core = names[: len(names) - keep], "/".join(names[len(names) - keep :])
    if lead:
        core_w = display_width(lead) + 1 + display_width(core)
    else:
        core_w = display_width(core)
    room = MAX_HEADER - core_w - len(head)  # each cut name is followed by a "/"
    if room < 2 * len(head):
        return None
    share: dict[int, int] = {}
    for j, (w, i) in enumerate(sorted((display_width(n), i) for i, n in enumerate(head))):
        share[i] = min(w, room // (len(head) - j))
        room -= share[i]
    return "/".join([*([lead] if lead else []), *(cut(n, share[i]) for i, n in enumerate(head)), core])
