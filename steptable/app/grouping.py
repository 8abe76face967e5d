"""How a watch session groups its runs, as ``steptable tail`` groups them (``by_schema``): one layout per trainer, the
arms of one experiment in one group. Each run's schema is found once for what it depends on. Pure (no textual)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from steptable.app.layouts import Layouts
from steptable.app.model import Store
from steptable.table.columns import Col

if TYPE_CHECKING:  # (imported when first needed: the first frame does not wait for them)
    from steptable.schemas import Schema


@dataclass
class Group:
    """Runs shown with one layout, as ``steptable tail`` groups them (``by_schema``): the arms of one experiment line
    up; another trainer's runs are a group of their own, with their own columns."""

    schema: Schema
    runs: list[str]
    layout: tuple[Col, ...] = ()
    keys: frozenset[str] = frozenset()  # the runs' keys the layout was made for
    layouts: Layouts = field(default_factory=Layouts)  # each key measured once, not again for every new key
    hidden_for: tuple[Any, tuple[Col, ...]] | None = None  # (filter, keys, layout) -> the columns it shows


class RunSchemas:
    """Each run's schema: its StepLogger's own, else the best-fitting one (see ``_detect``); found again only when
    what it depends on changed, not for every run whenever any run comes or grows keys (quadratic in a sweep's
    runs). ``say``: how a steptable.toml that cannot be used is said."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._seen: dict[int, tuple[Store, Schema | None, tuple[int, int], Schema]] = {}  # id(store) -> ...

    def of(self, store: Store) -> Schema:
        from steptable.schemas.registry import logged_schema

        logged = logged_schema(store)
        mark = (store.generation, len(store.keys))  # (a store's keys only grow: a rewritten file is a generation)
        seen = self._seen.get(id(store))
        if seen is not None and seen[0] is store and seen[1] is logged and seen[2] == mark:
            return seen[3]
        schema = logged or self._detect(store)
        self._seen[id(store)] = (store, logged, mark, schema)
        return schema

    def keep(self, stores: Collection[Store]) -> None:
        """Forget the runs not among ``stores`` (a file read anew is another store)."""
        ids = {id(s) for s in stores}
        self._seen = {k: v for k, v in self._seen.items() if k in ids}

    def _detect(self, store: Store) -> Schema:
        """The best-fitting schema; where a steptable.toml beside the run cannot be used, the best built-in one,
        and the file's problem said once (tail stops at it; a watch session goes on with the runs it can show)."""
        from steptable.schemafiles.resolve import detect
        from steptable.schemas import SchemaFileError

        try:
            return detect(store.path, store.keys)
        except SchemaFileError as e:
            self._say(str(e))
            return detect(store.path, store.keys, user=False)


def group_runs(
    stores: Sequence[Store], named: Schema | None, schema_of: Callable[[Store], Schema]
) -> list[tuple[Schema, list[Store]]]:
    """The runs grouped as tail groups them (all under ``named`` when a schema was named); runs with no keys yet go
    with the first group until they have."""
    from steptable.schemafiles.resolve import by_schema
    from steptable.schemas import GENERIC

    keyed = [s for s in stores if s.keys]
    groups = by_schema(keyed, named, schema_of=schema_of)
    rest = [s for s in stores if not s.keys]
    if rest and groups:
        groups[0][1].extend(rest)
    elif rest:
        groups = [(named or GENERIC, rest)]
    return groups


def groups_for(grouped: Sequence[tuple[Schema, list[str]]], old: Mapping[str, Group]) -> list[Group]:
    """The groups for runs grouped again (schema, run ids); a group that keeps a run of its schema (``old``: each
    run's group before) keeps its layout and measured keys."""
    taken: set[int] = set()
    out = []
    for schema, rids in grouped:
        group = next((g for rid in rids if (g := old.get(rid)) is not None and g.schema is schema
                      and id(g) not in taken), None)
        if group is None:
            group = Group(schema, rids)
        group.runs = rids
        taken.add(id(group))
        out.append(group)
    return out
