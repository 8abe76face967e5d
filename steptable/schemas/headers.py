"""Short, unambiguous column headers for metric keys that no schema declares. Pure.

Trainers name metrics by path (``actor/pg_loss``, ``env/all/reward/total``, ``timing_s/gen``). A header keeps the
tail of the path that still tells the key apart from every other key on screen:

1. Split the key on ``/``. A trailing ``mean`` or ``total`` is dropped: it is the natural reading of a batch
   statistic (``critic/score/mean`` -> ``score``, ``response_length/mean`` -> ``resp_len``); a trailing ``mean@N``
   joins the name before it (``val-core/src/reward/mean@4`` -> ``val/reward@4``).
2. A leading namespace whose tail means nothing alone stays as a short lead (``timing_s/gen`` -> ``t/gen``,
   ``timing_per_token_ms/gen`` -> ``tpt/gen``, ``val/test_score/gsm8k`` -> ``val/gsm8k``, ``eval/loss`` ->
   ``eval/loss``). Namespaces that only group (``env``, ``all``, ``train``) are skipped.
3. Start from the last segment (the last two when it is only a statistic: ``critic/score/max`` -> ``score/max``),
   and give every key that still shares a header one more segment, until all headers differ
   (``critic/rewards/max`` vs ``critic/score/max``; ``test/env/all/reward/total`` -> ``test/reward``).
4. Long words get a fixed abbreviation (``response_length`` -> ``resp_len``, ``grad_norm`` -> ``gnorm``).
5. Keys come from files and are untrusted: headers are made terminal-safe and at most ``MAX_HEADER`` cells wide
   (a long header is cut in its name, keeping a short ``/max``, ``:count`` or ``@4`` ending); whatever still
   collides (or collides with a declared header) gets the full key, then a ``~N`` suffix.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from steptable.formatting import cut, display_width, sanitize

#: widest automatic header, in cells
MAX_HEADER = 18

#: trailing segments that are the default reading of a batch statistic
_DROP_LAST = frozenset({"mean", "total", "avg"})

#: segments that only group metrics; they never appear in a header
_NOISE = frozenset({"env", "all", "train", "data"})

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
}

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

_STAT = re.compile(r"^(max|min|std|var|sum|count|median|p\d+|clip_ratio|(mean|std|best|worst|maj)@\d+.*)$")
_MEAN_AT = re.compile(r"^mean(@\d+)$")
#: a short last part kept whole when a long header is cut: "/max", ":count", "@4"
_TAIL = re.compile(r"^(.+?)([/:@][^/:@]{1,8})$")


def _parts(key: str) -> tuple[str | None, list[str]]:
    """(lead, segments) of a key, before abbreviation."""
    segs = [s for s in key.split("/") if s]
    if not segs:
        return None, [key or "?"]
    if len(segs) > 1 and segs[-1] in _DROP_LAST:
        segs = segs[:-1]
    if len(segs) > 1 and (m := _MEAN_AT.match(segs[-1])):  # reward/mean@4 -> reward@4
        segs = [*segs[:-2], segs[-2] + m.group(1)]
    lead = None
    if len(segs) > 1 and segs[0] in _LEADS:
        lead = _LEADS[segs[0]]
        segs = segs[1:]
    kept = [s for s in segs if s not in _NOISE]
    return lead, kept or segs


def _min_depth(segs: list[str]) -> int:
    return 2 if len(segs) > 1 and _STAT.match(segs[-1]) else 1


def _render(lead: str | None, segs: list[str], depth: int) -> str:
    tail = "/".join(_ABBREV.get(s, s) for s in segs[-depth:])
    return f"{lead}/{tail}" if lead else tail


def clean(text: str) -> str:
    """A header made safe for a terminal and for a one-line table: no controls, no spaces, bounded width."""
    t = sanitize(text).strip().replace(" ", "_") or "?"
    if display_width(t) <= MAX_HEADER:
        return t
    m = _TAIL.match(t)
    if m and display_width(m.group(2)) < MAX_HEADER // 2:
        return cut(m.group(1), MAX_HEADER - display_width(m.group(2))) + m.group(2)
    return cut(t, MAX_HEADER)


def short_header(key: str) -> str:
    """The header of ``key`` shown alone (no other key to tell it apart from)."""
    return short_headers([key])[key]


def short_headers(keys: Iterable[str], reserved: Collection[str] = ()) -> dict[str, str]:
    """A distinct header for each key, none equal to a ``reserved`` header (those of declared columns)."""
    order = list(dict.fromkeys(keys))
    parts = {k: _parts(k) for k in order}
    depth = {k: _min_depth(parts[k][1]) for k in order}
    taken = {r.strip() for r in reserved}
    fixed: dict[str, str] = {}  # keys that fell back to their full text

    def current(k: str) -> str:
        if k in fixed:
            return fixed[k]
        lead, segs = parts[k]
        return clean(_render(lead, segs, min(depth[k], len(segs))))

    for _ in range(64):  # each round grows at least one key; paths are short
        by_header: dict[str, list[str]] = {}
        for k in order:
            by_header.setdefault(current(k), []).append(k)
        clashes = [(h, ks) for h, ks in by_header.items() if len(ks) > 1 or h in taken]
        if not clashes:
            break
        grew = False
        for _h, ks in clashes:
            for k in ks:
                if k in fixed:
                    continue
                if depth[k] < len(parts[k][1]):
                    depth[k] += 1
                    grew = True
                else:
                    fixed[k] = clean(k)
                    grew = grew or fixed[k] != _render(*parts[k], len(parts[k][1]))
        if not grew:
            break
    out: dict[str, str] = {}
    seen = set(taken)
    for k in order:
        h = current(k)
        if h in seen:
            n = 2
            while True:
                suffix = f"~{n}"
                room = MAX_HEADER - len(suffix)
                cand = (cut(h, room) if display_width(h) > room else h) + suffix
                if cand not in seen:
                    h = cand
                    break
                n += 1
        seen.add(h)
        out[k] = h
    return out
