"""``summary --top K --by METRIC``: a sweep's best and worst runs by one metric, one line each, in a bounded number
of characters whatever the sweep's size (an agent reads it: about 4 characters a token, ``MAX_CHARS`` ~ 300 tokens).
Pure."""

from __future__ import annotations

from collections.abc import Sequence

from steptable.summary.sweep import RunDigest, ranked, run_state, sweep_line
from steptable.table.cells import cut_middle, first_few, key_name
from steptable.table.formatting import sanitize

#: the whole answer's length (about 300 tokens)
MAX_CHARS = 1150
#: a run's name is cut to this many cells (the middle left out)
MAX_NAME = 36
#: runs named among those whose metric ended NaN or inf (the rest counted)
NAMED = 3
STAT_WORDS = {"last": "last value", "mean": "mean of the newest rows", "best": "best value of the newest rows"}


def _num(x: float) -> str:
    return f"{x:.4g}"


def _line(rank: int, d: RunDigest, value: float, name: str, now: float) -> str:
    marks = "".join(f" {n}{c}" for n, c in ((d.errors, "E"), (d.warnings, "W")) if n)
    step = f" @{d.last_step}" if d.last_step is not None else ""
    return f"{rank}. {cut_middle(sanitize(name), MAX_NAME)} {_num(value)}{step} {run_state(d, now)}{marks}"


def _unranked(digests: Sequence[RunDigest], key: str, ranked_: Sequence[RunDigest], names: dict[str, str]) -> list[str]:
    """What is said of the runs left out of the ranking: those whose newest ``key`` is NaN or inf (named, the first
    ``NAMED``: a diverged run is what a sweep is read for), then how many have no value of it."""
    kept = {d.run for d in ranked_}
    off = [d for d in digests if d.run not in kept and key in d.last]
    out = []
    if off:
        shown = first_few([cut_middle(sanitize(names[d.run]), MAX_NAME) for d in off], NAMED)
        out.append(f"{len(off)} run{'s' if len(off) != 1 else ''} with {key_name(key)} NaN or inf at the newest row:"
                   f" {shown}")
    if missing := len(digests) - len(kept) - len(off):
        out.append(f"{missing} run{'s' if missing != 1 else ''} without {key_name(key)}")
    return out


def names_of(digests: Sequence[RunDigest]) -> dict[str, str]:
    """Each run's shortest name that is unique: its arm (directory), else its run id."""
    arms = [d.arm for d in digests]
    dup = {a for a in arms if arms.count(a) > 1} if len(set(arms)) != len(arms) else set()
    return {d.run: d.run if d.arm in dup else d.arm for d in digests}


def top_text(digests: Sequence[RunDigest], key: str, k: int, stat: str, higher: bool, now: float,
             known: bool = True) -> str:
    """The sweep's status line, what the ranking is by, the ``k`` best runs then the ``k`` worst (fewer when the
    answer would pass ``MAX_CHARS``; the lines left out are counted), the runs whose ``key`` ended NaN or inf, and how
    many runs lack ``key``. ``known``:
    whether ``higher`` is known to be better (the schema or the user says so), else it is only the order shown
    (an RL loss: neither way is better) and the text says so."""
    order = ranked(digests, key, stat, higher)
    names = names_of(digests)
    way = f"{'higher' if higher else 'lower'} is better" if known else \
        f"{'highest' if higher else 'lowest'} first: which way is better is not known"
    lines = [sweep_line(digests, now), f"by {key_name(key)} ({STAT_WORDS[stat]}, {way}):"]
    if not order:
        return "\n".join([*lines, f"no run logs {key_name(key)}"])
    k = max(1, k)
    best = [(i + 1, d, v) for i, (d, v) in enumerate(order[:k])]
    rest = order[len(best):]
    worst = [(len(order) - j, d, v) for j, (d, v) in enumerate(reversed(rest[-k:]))]
    foot = _unranked(digests, key, [d for d, _ in order], names)
    top, bottom = ("best:", "worst:") if known else ("highest:", "lowest:") if higher else ("lowest:", "highest:")
    while True:
        body = [top, *(_line(r, d, v, names[d.run], now) for r, d, v in best)]
        if worst:
            body += [bottom, *(_line(r, d, v, names[d.run], now) for r, d, v in worst)]
        left = len(order) - len(best) - len(worst)
        text = "\n".join([*lines, *body, *([f"({left} runs between)"] if left > 0 else []), *foot])
        if len(text) <= MAX_CHARS or len(best) <= 1:
            return text
        if len(worst) >= len(best):
            worst.pop()  # (the least bad of the worst first)
        else:
            best.pop()
