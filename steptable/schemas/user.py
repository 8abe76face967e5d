"""User schemas: TOML files declaring columns with the same fields as ``Col``, extending or overriding a built-in.

Where they are read from (nearest first when several match a file):

1. ``steptable.toml`` in the run's directory and in each of its four nearest parents (the log directories; a
   farther one that cannot be used is passed over, the nearest one's errors are reported);
2. ``$XDG_CONFIG_HOME/steptable/schemas/*.toml`` (``~/.config/steptable/schemas/*.toml`` without XDG_CONFIG_HOME).

The format (every field but ``schema.name`` and ``columns.key`` is optional)::

    [schema]
    name = "mine"                  # a built-in's name overrides that built-in (and extends it); "generic" is then
                                   # the fallback of the runs no schema fits; "steplogger[-N]" is StepLogger's
    extends = "verl"               # start from this schema's columns, rules, derived columns and side files
    description = "my PPO runs"
    extend = true                  # also show undeclared keys after the declared ones
    hide = ["timing_per_token_ms/*"]   # globs kept out of the default layout, declared columns too (a filter
                                       # still reaches them)
    drop = ["actor/lr"]            # inherited columns to remove (their keys are kept out of the layout too)

    [match]                        # without it: what its base matches; with no base, files logging a column's key
    files = ["*.jsonl"]            # path patterns, matched from the right (PurePath.match)
    keys = ["my/loss"]             # globs; each must match a key of the file

    [[columns]]                    # a key the base declares is overridden in place (unset fields inherited)
    key = "my/loss"
    width = 7                      # default: wide enough for the header and the fmt's text of 1.5 (at least 6)
    header = "myloss"              # default: the short header of the key; not blank, "step" only for a step key
    fmt = ".3f"                    # Python format spec, "frac", or omitted for the compact automatic format
    desc = "my loss"
    better = "lower"               # "higher" | "lower"; omitted when no direction is clearly good
    align = "right"                # "right" | "left" | "center"
    stream = true
    aliases = ["old/loss"]         # read this key when the column's own key is absent
    after = "actor/pg_loss"        # position; default: at the end (an override keeps its place)

    [[rules]]                      # keys matched by a glob: legend text, direction, hiding, promotion
    pattern = "my/*"
    desc = "my metric ({key})"
    better = "higher"
    hide = false
    promote = true

A file that cannot be used raises ``SchemaFileError`` whose text is ``<file>:<line>: <what is wrong>``. A log
directory's file with neither ``[match]`` nor a base that applies to none of the runs it is the nearest file of (its
keys misspelt, or only hide globs and rules) is said as a warning in those words
(``steptable.schemafiles.resolve.unused_files``), rather than passed over in silence. Parsing a file's text:
``steptable.schemas.userdoc``; finding and reading the files: ``steptable.schemafiles``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from steptable.schemas.base import META_KEYS, STEP_KEYS, Rule, Schema, one_part
from steptable.schemas.headers import short_headers
from steptable.schemas.userdoc import _TABLES, _check_fields, _Doc, _line_of
from steptable.schemas.userdoc import LOCAL_DEPTH as LOCAL_DEPTH
from steptable.schemas.userdoc import LOCAL_NAME as LOCAL_NAME
from steptable.schemas.userdoc import MAX_SCHEMA_BYTES as MAX_SCHEMA_BYTES
from steptable.schemas.userdoc import SchemaFileError as SchemaFileError
from steptable.table.columns import Col, ColumnError, check_fmt
from steptable.table.formatting import display_width, format_value, sanitize

#: the names of the schemas StepLogger runs are shown with (``registry.logged_schema``): ``by_schema`` groups runs
#: by name, so a user schema of one of them would share one table with the StepLogger runs
RESERVED_NAME = re.compile(r"steplogger(-\d+)?")
#: the header of the step column ``layout`` puts first: another key's column under it would be a second "step"
STEP_HEADER = "step"


def _column_error_field(e: Exception) -> str | None:
    field = getattr(e, "field", None)
    if field is not None:
        return str(field)
    message = str(e)
    for word, field in (("header", "header"), ("format", "fmt"), ("width", "width"), ("better", "better"),
                        ("align", "align"), ("description", "desc"), ("key", "key")):
        if word in message:
            return field
    return None


def _fmt_width(fmt: str | None) -> int:
    """Cells a spec's text of a typical value takes (``.6f``: 8): a default width narrower than that would show
    every value in the compact form instead of the spec the user asked for."""
    if fmt is None or fmt == "frac":
        return 0
    check_fmt(fmt, "column")  # (first: ">500000000.2f" would be formatted before it is refused)
    return display_width(format_value(1.5, fmt, 1000, fill=False))


def _build_col(doc: _Doc, spec: dict[str, Any], i: int, base: Col | None) -> Col:
    fields = {k: v for k, v in spec.items() if k not in ("after",)}
    if "aliases" in fields:
        fields["aliases"] = tuple(fields["aliases"])
    try:
        fmt_w = _fmt_width(fields.get("fmt"))
        if base is not None:
            if "width" not in fields and ("header" in fields or "fmt" in fields):
                fields["width"] = max(base.width, display_width(fields.get("header", "")), fmt_w)
            return base.with_(**fields)
        key = spec["key"]  # (the short header of my/step is not the step column's)
        header = fields.get("header") or short_headers([key], () if key in STEP_KEYS else (STEP_HEADER,))[key]
        fields["header"] = header
        fields.setdefault("width", max(display_width(header), 6, fmt_w))
        return Col(**fields)
    except (ColumnError, TypeError) as e:
        doc.fail(f"[[columns]] #{i + 1} ({spec['key']!r}): {e}", "columns", i, _column_error_field(e))
        raise  # unreachable: fail() raises


def _rule(doc: _Doc, spec: dict[str, Any], i: int) -> Rule:
    if "pattern" not in spec:
        doc.fail(f"[[rules]] #{i + 1}: a rule needs a pattern", "rules", i)
    try:
        return Rule(**spec)
    except ColumnError as e:
        doc.fail(f"[[rules]] #{i + 1}: {e}", "rules", i, e.field)
        raise


class _Order:
    """Column keys in order, with append, remove and insert-after in constant time (a file may declare hundreds of
    columns: a search of a list for each would be quadratic)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._next: dict[str | None, str | None] = {None: None}  # None: the ends
        self._prev: dict[str | None, str | None] = {None: None}
        for k in keys:
            self.append(k)

    def __contains__(self, key: str) -> bool:
        return key in self._next

    def __iter__(self) -> Iterator[str]:
        k = self._next[None]
        while k is not None:
            yield k
            k = self._next[k]

    def remove(self, key: str) -> None:
        before, after = self._prev.pop(key), self._next.pop(key)
        self._next[before], self._prev[after] = after, before

    def insert(self, key: str, after: str) -> None:
        self._link(key, after)

    def append(self, key: str) -> None:
        self._link(key, self._prev[None])

    def _link(self, key: str, after: str | None) -> None:
        nxt = self._next[after]
        self._next[after], self._prev[key], self._next[key], self._prev[nxt] = key, after, nxt, key


def schema_from_doc(doc: _Doc, bases: Mapping[str, Schema]) -> Schema:
    """The schema a parsed file declares; built once for each base it extends (the file's text is checked first)."""
    head, name, extends, base = _head(doc, bases)
    hit = doc.built.get(id(base))
    if hit is not None and hit[0] is base:
        return hit[1]
    schema = _build_schema(doc, head, name, extends, base)
    if len(doc.built) >= 8:  # a base edited again and again in a long watch: forget the oldest builds
        del doc.built[next(iter(doc.built))]
    doc.built[id(base)] = (base, schema)  # (the base kept: its id cannot be reused while it is here)
    return schema


def _head(doc: _Doc, bases: Mapping[str, Schema]) -> tuple[dict[str, Any], str, str | None, Schema | None]:
    """The file's ``[schema]`` table, its name, the name it extends and that schema."""
    for top in doc.data:
        if top not in _TABLES:
            doc.fail(f"unknown table {top!r} (known: {', '.join(_TABLES)})", top, None, top)
    head = _check_fields(doc, "schema", doc.data.get("schema", {}), None)
    name = head.get("name", "").strip()
    if not name or any(c.isspace() or not c.isprintable() for c in name):
        doc.fail("[schema] needs a name without spaces or control characters", "schema", None, "name")
    if RESERVED_NAME.fullmatch(name):
        doc.fail(f"[schema] name {name!r} is the name of the columns a StepLogger run printed with (runs of one "
                 "name share one table): choose another", "schema", None, "name")
    extends = head.get("extends", name if name in bases else None)
    base = bases.get(extends) if extends is not None else None
    if extends is not None and base is None:
        doc.fail(f"[schema] extends unknown schema {extends!r} (known: {', '.join(sorted(bases))})", "schema", None,
                 "extends")
    return head, name, extends, base


def _literal(key: str) -> str:
    """A glob matching ``key`` alone (a key may hold ``*``, ``?`` or ``[``)."""
    return re.sub(r"([*?\[])", r"[\1]", key)


def _build_schema(
    doc: _Doc, head: dict[str, Any], name: str, extends: str | None, base: Schema | None
) -> Schema:
    cols = {c.key: c for c in base.cols} if base is not None else {}
    order = _Order(cols)
    dropped: list[Col] = []
    for k in head.get("drop", []):
        if k not in cols:
            doc.fail(f"[schema] drop: {k!r} is not a column of {extends!r}", "schema", None, "drop")
        dropped.append(cols.pop(k))
        order.remove(k)
    user_index = _declare(doc, cols, order)
    final = [cols[k] for k in order]
    _check_headers(doc, final, user_index)
    raw_rules = doc.data.get("rules", [])
    if not isinstance(raw_rules, list):
        doc.fail("rules must be an array of tables: [[rules]]", "rules", None, "rules")
    rules = [_rule(doc, _check_fields(doc, "rules", r, i), i) for i, r in enumerate(raw_rules)]
    rules += [Rule(p, hide=True) for p in head.get("hide", [])]
    # a dropped column's key (and its aliases) stays out of the default layout too, described as the base did (not
    # back as an automatic column "(as logged)")
    rules = [Rule(_literal(k), c.desc, c.better, hide=True)
             for c in dropped for k in (c.key, *c.aliases) if k not in cols] + rules
    match_spec = _check_fields(doc, "match", doc.data.get("match", {}), None)
    for k in ("files", "keys"):
        if any(not p.strip() for p in match_spec.get(k, [])):
            doc.fail(f"[match] {k}: an empty pattern", "match", None, k)
    return Schema(
        name,
        tuple(final),
        head.get("description", base.description if base is not None else f"user schema from {doc.path}"),
        _Match(match_spec.get("files", []), match_spec.get("keys", []), base,
               frozenset(k for c in final for k in (c.key, *c.aliases)) - _EVERY_RUN),
        head.get("extend", base.extend if base is not None else True),
        rules=tuple(rules) + (base.rules if base is not None else ()),
        derived=tuple(d for d in base.derived if d.key in cols) if base is not None else (),
        side_files=base.side_files if base is not None else (),
        part=base.part if base is not None else one_part,
        several=base.several if base is not None else None,
        source=doc.path,
        hides=_hides(final, user_index, rules, base),
    )


def _hides(final: Sequence[Col], own: Mapping[str, int], rules: Sequence[Rule], base: Schema | None) -> frozenset[str]:
    """The declared columns a file keeps out of the default layout: those it takes from its base that its own hide
    globs and hiding rules match, and those its base kept out already; never one the file declares itself."""
    taken = [c.key for c in final if c.key not in own]
    hiding = [r for r in rules if r.hide]
    inherited = base.hides if base is not None else frozenset()
    return frozenset(k for k in taken if k in inherited or any(r.matches(k) for r in hiding))


def _declare(doc: _Doc, cols: dict[str, Col], order: _Order) -> dict[str, int]:
    """Apply the file's ``[[columns]]`` to the base's ``cols`` and ``order``; the index of each declared key."""
    raw_cols = doc.data.get("columns", [])
    if not isinstance(raw_cols, list):
        doc.fail("columns must be an array of tables: [[columns]]", "columns", None, "columns")
    user_index: dict[str, int] = {}
    for i, entry in enumerate(raw_cols):
        spec = _check_fields(doc, "columns", entry, i)
        key: str = spec.get("key") or ""
        if not key:
            doc.fail(f"[[columns]] #{i + 1}: a column needs a key", "columns", i)
        if key in user_index:
            doc.fail(f"[[columns]] #{i + 1}: key {key!r} declared twice", "columns", i, "key")
        if "header" in spec and display_width(sanitize(spec["header"]).strip()) == 0:
            doc.fail(f"[[columns]] #{i + 1} ({key!r}): the header is empty (leave it out for the key's short "
                     "header)", "columns", i, "header")
        col = _build_col(doc, spec, i, cols.get(key))
        after = spec.get("after")
        if after is not None:
            if after == key or after not in cols:
                doc.fail(f"[[columns]] #{i + 1}: after {after!r}: no such column", "columns", i, "after")
            if key in order:
                order.remove(key)
            order.insert(key, after)
        elif key not in order:
            order.append(key)
        cols[key] = col
        user_index[key] = i
    return user_index


def _check_headers(doc: _Doc, cols: Sequence[Col], user_index: Mapping[str, int]) -> None:
    headers: dict[str, str] = {}
    for c in cols:
        h = c.header.strip()
        if h == STEP_HEADER and c.key not in STEP_KEYS:  # the step column layout adds is headed "step"
            i = user_index.get(c.key, 0)
            doc.fail(f"[[columns]] #{i + 1} ({c.key!r}): the header {h!r} is the step column's", "columns", i, "header")
        if h in headers:
            i = user_index.get(c.key, user_index.get(headers[h], 0))
            doc.fail(f"columns {headers[h]!r} and {c.key!r} share the header {h!r}", "columns", i, "header")
        headers[h] = c.key


#: keys nearly every run logs: declaring one (a wider step column) says nothing about which runs a file is for
_EVERY_RUN = frozenset(STEP_KEYS) | frozenset(META_KEYS)


class _Match:
    """How well a file fits a user schema: its ``[match]`` patterns; without them, what its base matches; with no
    base, the files that log a key it declares (an alias too)."""

    def __init__(self, files: Sequence[str], key_globs: Sequence[str], base: Schema | None,
                 declared: frozenset[str]) -> None:
        self.files, self.key_globs, self.base, self.declared = tuple(files), tuple(key_globs), base, declared

    @property
    def by_keys(self) -> bool:
        """The file says nothing of which runs it is for: a run logging a key it declares is one of them."""
        return not self.files and not self.key_globs and self.base is None

    def __call__(self, path: Path, keys: Sequence[str]) -> float:
        if self.files and not any(Path(path).match(p) for p in self.files):
            return 0.0
        if self.key_globs and not all(any(fnmatchcase(k, g) for k in keys) for g in self.key_globs):
            return 0.0
        if self.files or self.key_globs:
            return 1.0
        if self.base is not None:
            return self.base.match(path, keys)
        # Matching nothing would leave the file unused (``unused_error`` says so); matching everything would take
        # over runs it says nothing about.
        return 1.0 if not self.declared.isdisjoint(keys) else 0.0


def unused_error(schema: Schema, doc: _Doc, runs: int, keys: Collection[str]) -> SchemaFileError | None:
    """What to say of a log directory's file (``doc``, which ``schema`` was built from) that applies to none of the
    ``runs`` it is the nearest file of (``keys``: theirs); None when the file says which runs it is for
    (``[match]``, a base): not matching is then its choice. A file of only hide globs or rules, or whose keys are
    all misspelt, would otherwise pass without a word."""
    match = schema.match
    if not isinstance(match, _Match) or not match.by_keys:
        return None
    raw = doc.data.get("columns")
    own = [c.key for c in schema.cols if c.key not in _EVERY_RUN]
    fix = "[match] files or keys, or extends, would say which runs it is for"
    where = f"applies to none of the {runs} run(s) beside it"
    if not own:
        return SchemaFileError(doc.path, _line_of(doc.text, "schema", None, "name"), f"{where}: it declares no "
                               f"column besides the step, no [match] and no extends; {fix}")
    at = next((i for i, e in enumerate(raw) if isinstance(e, dict) and e.get("key") == own[0]), None) \
        if isinstance(raw, list) else None
    listed = ", ".join(repr(k) for k in own[:3]) + (" ..." if len(own) > 3 else "")
    near = next(((k, m[0]) for k in own[:3] if (m := difflib.get_close_matches(k, list(keys), n=1, cutoff=0.8))),
                None)
    hint = f"; {near[0]!r} for {near[1]!r}?" if near is not None else ""
    return SchemaFileError(doc.path, _line_of(doc.text, "columns", at, "key"),
                           f"{where}: none logs a key its columns declare ({listed}){hint}; {fix}")
