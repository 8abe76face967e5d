"""The built-in schemas and detection among candidate schemas.

Detection scores every candidate with its ``match(path, keys)`` (0..1) and takes the best; user schemas (which
steptable.schemafiles reads and passes in) are asked first, so on a tie the user's wins, and a file nothing claims
with at least 0.5 gets the generic schema (a user schema named ``generic`` where one applies). Pure: a path here is
a name to match, never a file to open.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import Protocol, TypeVar

from steptable.schemas import generic, retrain, sb3, tinker, tinyzero, trl, verl
from steptable.schemas.base import META_KEYS, Rule, Schema, SideFile
from steptable.schemas.routing import DIAGNOSTIC_KEYS, routing_columns
from steptable.table import runinfo
from steptable.table.columns import Col, streamed
from steptable.table.stepkeys import is_step_key

#: the routing arms' distinctive keys
ROUTING_MARKERS = frozenset({"hack_s", "gt_s", "rew_s", "ref_eq", "hack_t", "gt_t", *DIAGNOSTIC_KEYS})


def _routing_match(path: Path, keys: Sequence[str]) -> float:
    hits = len(set(keys) & ROUTING_MARKERS)
    return min(hits / 5, 1.0)


_ROUTING_ALL = routing_columns(modes=("code", "math"), mode_code={"code": "c", "math": "m"}, show_ablate=True)

ROUTING = Schema(
    "routing",
    streamed(_ROUTING_ALL),
    "gradient-routing arms (vanilla / routeA / absorb)",
    _routing_match,
    # the dump-only timing columns stay out of the table, as in the per-step stdout row
    rules=tuple(Rule(c.key, c.desc, c.better, c.fmt, hide=True) for c in _ROUTING_ALL if not c.stream),
    extra=tuple(c for c in _ROUTING_ALL if not c.stream),
)

GENERIC = generic.SCHEMA

#: built-in schemas, by name
SCHEMAS: dict[str, Schema] = {
    s.name: s
    for s in (ROUTING, retrain.SCHEMA, verl.SCHEMA, tinyzero.SCHEMA, tinker.SCHEMA, trl.TRL, trl.MAXENT, sb3.SCHEMA,
              GENERIC)
}


def detect(path: str | os.PathLike[str], keys: Sequence[str], users: Sequence[Schema] = ()) -> Schema:
    """The schema that fits a file best among ``users`` (the user schemas that apply there, highest priority first)
    and the built-ins; generic when none scores at least 0.5 (the user's ``generic`` where one applies: it
    overrides the built-in, whose match scores nothing).

    Built-in rules (scores in 0..1; see each schema module):
    routing   five or more of its arm keys (hack_s, gt_s, rew_s, auroc, qmass, ...)
    retrain   its own keys (mean_reward, correct_rate, sepa_*, bp_*, num_datums, ...); emergence/steps.jsonl
    verl      two or more verl key prefixes (actor/, critic/, timing_s/, perf/, val-core/, ...), or validation
              keys alone (step 0); current-verl markers and a JSON file tell it from tinyzero
    tinyzero  the same family with TinyZero markers (mfu/actor, actor/entropy_loss, val/test_score/), or a console
              log (not JSON)
    tinker    progress/*, env/all/*, optim/* keys
    trl       trainer_state.json, and HF/TRL keys (loss, learning_rate, reward, completions/..., eval_loss)
    maxent-grpo  train/ prefixed keys that only MaxEnt-GRPO logs (train/tau, train/beta, train/weight_entropy, ...)
    sb3       three or more keys only Stable-Baselines3 records (time/total_timesteps, rollout/ep_rew_mean, ...)
    """
    p = Path(path)
    fallback = next((s for s in users if s.name == GENERIC.name), GENERIC)
    best, score = fallback, 0.0
    for s in [*users, *SCHEMAS.values()]:
        m = s.match(p, keys)
        if m > score:
            best, score = s, m
    return best if score >= 0.5 else fallback


class Located(Protocol):
    """A run as detection sees it: its file and its keys (``RunStore`` is one)."""

    @property
    def path(self) -> Path: ...

    @property
    def keys(self) -> Sequence[str]: ...


R = TypeVar("R", bound=Located)


_LOGGED: dict[tuple[Col, ...], Schema] = {}
_LOGGED_PATH = Path("metrics.jsonl")  # (a StepLogger's rows: no file name a schema is detected by)
_LOGGED_NAMES = itertools.count(1)
_CHECKED: dict[int, tuple[dict[str, object], tuple[Col, ...] | None]] = {}


def logged_schema(run: object) -> Schema | None:
    """The schema a run's StepLogger printed it with (its ``steptable.json``, table.runinfo), so that ``tail``,
    ``summary``, ``legend`` and ``watch`` show it with the same columns, numbers and words; None without one. A
    routing column set (any of its configurations) is the routing schema; arms logged with one column set share one
    schema (and so one layout)."""
    meta = getattr(run, "meta", None)
    info = meta.get("runinfo") if isinstance(meta, dict) else None
    if not info:
        return None
    seen = _CHECKED.get(id(info))
    if seen is not None and seen[0] is info:  # checked already (a description of 8,000 columns takes 60 ms)
        cols = seen[1]
    else:
        cols = runinfo.columns(info)
        if len(_CHECKED) >= 512:
            del _CHECKED[next(iter(_CHECKED))]
        _CHECKED[id(info)] = (info, cols)  # (the info kept: its id cannot be reused while it is here)
    if cols is None:
        return None
    found = _LOGGED.get(cols)
    if found is not None:
        return found
    shown, hidden = streamed(cols), [c for c in cols if not c.stream]
    if all(c in ROUTING.cols for c in shown) and all(ROUTING.rule(c.key) is not None for c in hidden):
        found = ROUTING
    else:
        n = next(_LOGGED_NAMES)  # never reused: by_schema groups runs by name
        rules = tuple(Rule(c.key, c.desc, c.better, c.fmt, hide=True) for c in hidden)
        # the keys it did not print are described (and kept out) as the trainer its columns are of says: SB3's
        # counters stay out of tail and watch as they stayed out of the console
        trainer = detect(_LOGGED_PATH, [c.key for c in cols])
        if trainer is not GENERIC:
            rules += trainer.rules
        found = Schema("steplogger" if n == 1 else f"steplogger-{n}", shown, "the columns the run's StepLogger "
                       "printed with", rules=rules, extra=tuple(hidden))
    if len(_LOGGED) >= 256:  # a long watch whose runs change columns: forget the oldest
        del _LOGGED[next(iter(_LOGGED))]
    _LOGGED[cols] = found
    return found


def builtin_run_schema(run: Located) -> Schema:
    """The schema a run is shown with when no user schema applies: its StepLogger's own, else the best-fitting
    built-in for its file and keys."""
    return logged_schema(run) or detect(run.path, run.keys)


def by_schema(
    runs: Sequence[R], schema: Schema | None = None, schema_of: Callable[[R], Schema] | None = None
) -> list[tuple[Schema, list[R]]]:
    """Runs grouped by the schema each is detected as (or all under ``schema`` when one is named), groups in the
    order their first run comes: a directory holding a verl run and an SB3 run lays each out as its own trainer
    writes it, and the arms of one experiment (one schema) still share one layout. A schema that declares no
    columns (generic: any CSV log or unknown JSONL), or one that covers several trainers (``Schema.several``: HF
    Trainer's state files of SFT, PPO or GRPO), says nothing of which runs belong together, so its runs are
    grouped only with runs they share most keys with (:func:`_shares_keys`): a Lightning run and an SB3 run beside
    it each keep their own columns, not one table of the two, half nan. ``schema_of``: how a run's schema is found
    (default :func:`builtin_run_schema`; steptable.schemafiles passes the one that reads the user's files)."""
    groups: list[tuple[Schema, list[R], set[str], str]] = []
    for r in runs:
        s = schema if schema is not None else (schema_of or builtin_run_schema)(r)
        # (a user's generic declares columns but no more than the built-in says which runs belong together)
        loose = schema is None and (not s.cols or s.name == GENERIC.name or s.several is not None)
        keys = {k for k in r.keys if not is_step_key(k)} - _NOT_METRICS - (s.several or frozenset())
        part = s.part(r.path)
        group = next((g for g in groups if g[0].name == s.name and g[3] == part
                      and (not loose or _shares_keys(keys, g[2]))), None)
        if group is None:
            group = (s, [], set(), part)
            groups.append(group)
        group[1].append(r)
        group[2].update(keys)
    return [(s, g) for s, g, _, _ in groups]


#: keys every kind of run may log (steps, clocks, names): no sign that two runs log the same things
_NOT_METRICS = frozenset({*META_KEYS, "time", "epoch"})


def _shares_keys(keys: set[str], group: set[str]) -> bool:
    """Whether a run's keys and a group's have more than half of the smaller set in common (or either has none
    yet): arms of one experiment (the same keys, one with a few more) and a run that has logged only its first keys
    so far do; two trainers' logs that share a ``loss`` or two do not."""
    return not keys or not group or 2 * len(keys & group) > min(len(keys), len(group))


def side_file(path: str | os.PathLike[str], schema: Schema | None = None) -> tuple[Schema, SideFile] | None:
    """The schema and side-file declaration a file belongs to when it is not a step-row file (``schema``'s first,
    then every built-in's); None for a file of step rows."""
    p = PurePath(path)
    for s in ([schema] if schema is not None else []) + list(SCHEMAS.values()):
        sf = s.side_file(p)
        if sf is not None:
            return s, sf
    return None
