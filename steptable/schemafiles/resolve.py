"""The schema each run on disk is shown with: the user schemas that apply at its path (read through
:mod:`steptable.schemafiles.files`) on top of the built-ins, detection with them, grouping runs by them, and the
log directories' files that apply to no run beside them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from steptable.schemafiles.files import config_dir, files_below, named_file, nearest_local, read_doc, schema_files
from steptable.schemas import registry
from steptable.schemas.base import Schema
from steptable.schemas.registry import SCHEMAS, Located, R, logged_schema
from steptable.schemas.user import LOCAL_NAME, SchemaFileError, schema_from_doc, unused_error


def load_schema_file(path: str | os.PathLike[str], bases: Mapping[str, Schema] | None = None) -> Schema:
    """The schema a TOML file declares; ``bases`` are the schemas it may extend (default: the built-ins)."""
    return schema_from_doc(read_doc(Path(path)), SCHEMAS if bases is None else bases)


def user_schemas(near: str | os.PathLike[str] | None = None) -> list[Schema]:
    """User schemas that apply at ``near`` (a run file or directory), highest priority first. User files may extend
    built-ins and the user's own config schemas; the log-directory file may extend any of them."""
    files = schema_files(near)
    named = named_file()
    local = [f for f in files if (f.name == LOCAL_NAME and f.parent != config_dir()) or f == named]
    # config files first, then the log-directory files farthest first: each may extend the ones before it
    order = [f for f in files if f not in local] + local[::-1]
    known = dict(SCHEMAS)
    loaded: dict[Path, Schema] = {}
    for f in order:
        try:
            doc = read_doc(f)
            if doc.data and set(doc.data) <= {"compare"}:  # only steptable compare's settings: no schema
                continue
            s = schema_from_doc(doc, known)
        except SchemaFileError:
            if f in local[1:]:  # a farther log directory's file that cannot be used: the nearer ones still apply
                continue
            raise  # the run's own (nearest) file, or the user's config: say what is wrong
        known[s.name] = s
        loaded[f] = s
    return [loaded[f] for f in files if f in loaded]


def schema_names(near: str | os.PathLike[str] | None = None) -> list[str]:
    """Every schema name ``get_schema`` accepts at ``near``."""
    return sorted({*SCHEMAS, *(s.name for s in user_schemas(near))})


def get_schema(name: str, near: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None) -> Schema:
    """A schema by name (``--schema NAME``): a user schema of that name first (the ``steptable.toml`` files at
    ``near``, a path or each of several paths: any of the paths a command was given), then a built-in."""
    places: Sequence[str | os.PathLike[str] | None] = (
        [near] if near is None or isinstance(near, (str, os.PathLike)) else list(near) or [None])
    for place in places:
        for s in user_schemas(place):
            if s.name == name:
                return s
    # ``steptable tail logs --schema mine`` with mine in logs/exp1/steptable.toml: detection finds that file beside
    # the runs, so the name must be found there too (walked only for a name nothing above declares); a file there
    # that overrides a built-in (its own ``verl``) is what detection applies, so it wins over the built-in here too
    below = [s for place in places if place is not None
             for f in files_below(Path(place)) for s in user_schemas(f.parent)]
    found = next((s for s in below if s.name == name), None)
    if found is not None:
        return found
    if name in SCHEMAS:
        return SCHEMAS[name]
    known = sorted({*schema_names(places[0]), *(s.name for s in below)})
    raise KeyError(f"unknown schema {name!r}; known: {', '.join(known)}")


def detect(path: str | os.PathLike[str], keys: Sequence[str], user: bool = True) -> Schema:
    """The schema that fits a file best (see steptable.schemas.registry.detect), the user schemas that apply at
    ``path`` included unless ``user`` is False."""
    return registry.detect(path, keys, user_schemas(path) if user else ())


def run_schema(run: Located) -> Schema:
    """The schema a run is shown with: its StepLogger's own, else the best-fitting one for its file and keys."""
    return logged_schema(run) or detect(run.path, run.keys)


def by_schema(
    runs: Sequence[R], schema: Schema | None = None, schema_of: Callable[[R], Schema] | None = None
) -> list[tuple[Schema, list[R]]]:
    """Runs grouped by schema as steptable.schemas.registry.by_schema groups them, each run's schema found with the
    user's files (:func:`run_schema`) unless ``schema_of`` says otherwise."""
    return registry.by_schema(runs, schema, schema_of or run_schema)


def unused_files(runs: Sequence[Located]) -> list[SchemaFileError]:
    """The log directories' steptable.toml files that apply to none of the runs they are the nearest file of (see
    ``user.unused_error``); a StepLogger's run keeps its own columns and is not counted. A warning, not a stop: a
    file may be meant for runs that have not logged its keys yet, or for sibling runs. Only runs beside such a file
    are detected (most directories have none)."""
    nearest: dict[Path, Path | None] = {}  # a run's directory -> its nearest steptable.toml
    beside: dict[Path, list[Located]] = {}
    for r in runs:
        if not r.keys or logged_schema(r) is not None:  # nothing logged yet; a StepLogger's run: its own columns
            continue
        d = Path(r.path).parent
        if d not in nearest:
            nearest[d] = nearest_local(r.path)
        f = nearest[d]
        if f is not None:
            beside.setdefault(f, []).append(r)
    out: list[SchemaFileError] = []
    for f, near in beside.items():
        if any(run_schema(r).source == str(f) for r in near):
            continue
        own = next((s for s in user_schemas(near[0].path) if s.source == str(f)), None)
        error = None if own is None else unused_error(own, read_doc(f), len(near), {k for r in near for k in r.keys})
        if error is not None:
            out.append(error)
    return out


def schema_file_notes(groups: Sequence[tuple[Schema, Sequence[Located]]]) -> list[str]:
    """One line per user schema file that lays out some of the runs: ``schema file PATH (name NAME): N run(s)``.
    A file that changes what columns mean must be seen to apply (every view says which)."""
    counts: dict[tuple[str, str], int] = {}
    for schema, group in groups:
        if schema.source != "built-in":
            counts[(schema.source, schema.name)] = counts.get((schema.source, schema.name), 0) + len(group)
    return [f"schema file {path} (schema {name}): {n} run(s)" for (path, name), n in counts.items()]
