"""Which columns a summary shows (key columns, as :mod:`steptable.summary.report` defines them): the ones each run's
schema declares and the alert roles watch, then promoted evaluation scores, then the most present varying keys, up
to a budget per group of runs one layout shows. Pure: reads runs, never prints."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol, cast

from steptable.alerts.engine import AlertConfig
from steptable.ingest.parsed import counter
from steptable.schemafiles.resolve import by_schema, run_schema
from steptable.schemas import Schema
from steptable.schemas.legend import watched_first
from steptable.schemas.registry import Located
from steptable.summary.trend import ColStats
from steptable.table.stepkeys import is_step_key


class RunLike(Protocol):
    """What a summary reads of a run. Read-only properties, so that plain attributes of any subtype (a ``list[int]``
    for ``steps``) satisfy it."""

    @property
    def run(self) -> str: ...
    @property
    def arm(self) -> str: ...
    @property
    def keys(self) -> list[str]: ...  # first-seen order
    @property
    def steps(self) -> Sequence[int]: ...  # ascending
    @property
    def resumes(self) -> list[int]: ...
    @property
    def bad_count(self) -> int: ...
    @property
    def last_update(self) -> float | None: ...  # unix time of the latest row
    @property
    def wall_times(self) -> Sequence[float]: ...  # per row unix time (may be empty)

    def column(self, key: str) -> Sequence[Any]: ...  # aligned with steps: floats (nan = missing), (n, d), str, ...

    def __len__(self) -> int: ...


SKIP_KEYS = frozenset({"step", "_step", "global_step", "ts", "time", "timestamp", "_timestamp", "wall_time",
                       "_runtime", "run", "arm"})
_ROLE_KEYS = AlertConfig().watched()


def lead_columns(runs: Sequence[RunLike], schema: Schema | None = None) -> dict[str, int]:
    """Key -> tier of the columns a summary leads with: 0 the keys each run's schema declares (or an alias of one),
    in its table's order, then alert-role keys; 1 keys a rule promotes. A run with no ``path`` brings no schema;
    ``schema``: the one all ``runs`` are shown with (one ``by_schema`` group), not detected again."""
    groups: dict[str, tuple[Schema, set[str]]] = {}
    for r in (r for r in runs if hasattr(r, "path")):
        s = schema if schema is not None else run_schema(cast(Located, r))
        groups.setdefault(s.name, (s, set()))[1].update(r.keys)
    # (the column a schema marks as the one to watch first leads: the routing arms' hack_s?)
    declared = (next((a for a in (c.key, *c.aliases) if a in keys), "") for s, keys in groups.values()
                for c in sorted(s.cols, key=lambda c: not watched_first(c)))
    order = dict.fromkeys(k for r in runs for k in r.keys)
    tiers = dict.fromkeys([k for k in declared if k] + [k for k in order if k in _ROLE_KEYS], 0)
    promoted = (k for k in order if any(k in keys and (u := s.rule(k)) is not None and u.promote for s, keys in
                                        groups.values()))
    return tiers | {k: 1 for k in promoted if k not in tiers}


#: runs grouped as :func:`by_schema` groups them, each group with the schema it is shown with
Groups = Sequence[tuple[Schema, Sequence[Any]]]


def picked(
    runs: Sequence[RunLike], stats: Mapping[tuple[int, str], ColStats], max_columns: int, skip: Collection[str] = (),
    lead: Mapping[str, int] | None = None, groups: Groups | None = None,
) -> dict[str, set[int]]:
    """Key column -> the runs (indices) it is picked for. Each group of runs one layout shows (``by_schema``: one
    trainer, the arms of one experiment) gets up to ``max_columns`` of its own: with one budget for all, the first
    trainers' declared columns would fill it and the others get no rows. Groups in the order their first run comes;
    ``groups``: ``by_schema(runs)`` where the caller has it (detection is not free)."""
    out: dict[str, set[int]] = {}
    for schema, group in _groups(runs, groups):
        sub = {(j, k): st for j, i in enumerate(group) for k in runs[i].keys if (st := stats.get((i, k))) is not None}
        members = [runs[i] for i in group]
        for key in _pick_group(members, sub, max_columns, skip, lead, schema):
            out.setdefault(key, set()).update(group)
    return out


def _groups(runs: Sequence[RunLike], groups: Groups | None) -> list[tuple[Schema | None, list[int]]]:
    """Run indices grouped as ``by_schema`` groups them, with their schema; the runs without a ``path`` (no schema)
    one group, last."""
    index = {id(r): i for i, r in enumerate(runs)}
    if groups is None:
        groups = by_schema([cast(Located, r) for r in runs if hasattr(r, "path")])
    out: list[tuple[Schema | None, list[int]]] = [(s, [index[id(r)] for r in g if id(r) in index]) for s, g in groups]
    grouped = {i for _, g in out for i in g}
    rest = [i for i in range(len(runs)) if i not in grouped]
    return [*out, (None, rest)] if rest else out


def _pick_group(
    runs: Sequence[RunLike], stats: Mapping[tuple[int, str], ColStats], max_columns: int, skip: Collection[str],
    lead: Mapping[str, int] | None, schema: Schema | None = None,
) -> list[str]:
    """Up to ``max_columns`` key columns of one group: ``lead``'s (key -> tier, :func:`lead_columns`) first, then the
    most present varying ones (see the module doc)."""
    order = dict.fromkeys(k for r in runs for k in r.keys)
    # each run's own step key too (iteration, training/global_step...), and below any other spelling of a step a
    # row carries beside it (trackio's rows of an HF run: its step and train/global_step): the header gives the steps
    skip = SKIP_KEYS | set(skip) | {k for r in runs if isinstance(k := getattr(r, "step_key", None), str)}
    lead = lead_columns(runs, schema) if lead is None else lead
    lists: tuple[list[str], list[str]] = ([], [])
    score: dict[str, float] = {}
    for key in [*(k for k in lead if k in order), *(k for k in order if k not in lead)]:
        tier = lead.get(key)
        # (an epoch a schema declares is one of its columns; a step in any spelling never is)
        if key in skip or is_step_key(key) or (tier is None and counter(key)):
            continue
        sts = [(st, len(r.steps)) for i, r in enumerate(runs) if (st := stats.get((i, key))) is not None]
        # not a dense constant (a fixed lr is a setting), but an evaluation score that did not move is a headline,
        # and so is a NaN or a single value; and an alert role's column stays whatever it does (a reward or a grad
        # norm stuck at 0 is the news of a dead run, not a setting)
        if tier == 0 and any(st.logged and (st.varies or st.present < max(2, st.logged) or 2 * st.logged <= n
                                            or key in _ROLE_KEYS) for st, n in sts):
            lists[0].append(key)
        elif tier == 1 and any(st.logged and (st.varies or st.present < max(2, st.logged) or _score(key))
                               for st, _ in sts):
            lists[1].append(key)
        elif tier is None and (best := max((st.logged / max(1, n) for st, n in sts if st.varies), default=0.0)):
            score[key] = best
    ranked = sorted(score, key=lambda k: -score[k])  # stable: equal scores keep first-seen order
    keep = set([*lists[0], *lists[1], *ranked][: max(0, max_columns)])
    return [k for k in [*lists[0], *lists[1], *score] if k in keep]


#: the words of a key that make it a score (a word's start, a whole word, or "...acc"): an evaluation's accuracy,
#: reward, pass rate, share solved or well formatted, a text metric (rouge, bleu), a correlation. Held at one value
#: across evaluations, such a key is the headline of the run (it stalled); anything else held is bookkeeping of the
#: evaluation (its 64 episodes, a clip ratio that is 0 with no old policy to clip against), and so is a score word
#: beside a time, size or count word (format_time_s, accepted_len, grad_accum_steps)
_SCORE_STEMS = ("accura", "correct", "reward", "score", "pass", "success", "solv", "exact", "format", "rouge", "bleu",
                "sacrebleu", "pearson", "spearman", "matthews", "precision", "recall", "auroc")
_SCORE_WORDS = frozenset({"acc", "rew", "win", "winrate", "f1", "em", "wer", "cer", "chrf", "meteor", "auc", "mcc"})
_NOT_SCORE = frozenset({"time", "s", "sec", "secs", "seconds", "runtime", "steps", "samples", "tokens", "len",
                        "length", "count", "num", "size", "turns", "episodes"})


def _score(key: str) -> bool:
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower())
    return not _NOT_SCORE.intersection(words) and any(
        w.startswith(_SCORE_STEMS) or w in _SCORE_WORDS or w.endswith("acc") for w in words)
