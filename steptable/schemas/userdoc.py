"""The document layer of user schema files: a file's text parsed as TOML, the fields each table may hold, and the
line a problem is at. ``steptable.schemas.user`` builds schemas from these documents; finding and reading the files
is steptable.schemafiles' part (this module never touches the filesystem)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from steptable.schemas.base import Schema


def _toml() -> Any:
    """The TOML parser, imported on first use: ``tomllib`` (3.11+) or the ``tomli`` package it came from (3.10)."""
    try:
        import tomllib  # type: ignore[import-not-found, unused-ignore]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]
    return tomllib

#: a schema file larger than this is an error (a few hundred columns take a few kilobytes)
MAX_SCHEMA_BYTES = 1 << 20
#: file name of a log directory's schema
LOCAL_NAME = "steptable.toml"
#: parents of a run file searched for LOCAL_NAME
LOCAL_DEPTH = 4

_SCHEMA_FIELDS: dict[str, type] = {
    "name": str, "extends": str, "description": str, "extend": bool, "hide": list, "drop": list,
}
_MATCH_FIELDS: dict[str, type] = {"files": list, "keys": list}
_COLUMN_FIELDS: dict[str, type] = {
    "key": str, "width": int, "header": str, "fmt": str, "desc": str, "better": str, "align": str, "stream": bool,
    "aliases": list, "after": str,
}
_RULE_FIELDS: dict[str, type] = {"pattern": str, "desc": str, "better": str, "fmt": str, "hide": bool, "promote": bool}
#: ``steptable compare``'s defaults for the runs below the file (read by steptable.schemafiles.files.compare_settings)
_COMPARE_FIELDS: dict[str, type] = {"group": str, "x": str, "baseline": str}
_TABLES: dict[str, dict[str, type]] = {
    "schema": _SCHEMA_FIELDS, "match": _MATCH_FIELDS, "columns": _COLUMN_FIELDS, "rules": _RULE_FIELDS,
    "compare": _COMPARE_FIELDS,
}


class SchemaFileError(ValueError):
    """A user schema file that cannot be used; ``str()`` is ``<file>:<line>: <message>``."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        super().__init__(f"{path}:{line}: {message}" if line else f"{path}: {message}")


@dataclass
class _Doc:
    """A parsed file: its text (for line numbers), its data, and the schemas built from it, by the base each was
    built on (a detection asks for the file's schema for every run: it is built once per base, not once per run)."""

    path: str
    text: str
    data: dict[str, Any]
    built: dict[int, tuple[Schema | None, Schema]] = field(default_factory=dict)

    def fail(self, message: str, table: str | None = None, index: int | None = None, key: str | None = None) -> None:
        raise SchemaFileError(self.path, _line_of(self.text, table, index, key), message)


_TABLE_LINE = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _line_of(text: str, table: str | None, index: int | None, key: str | None) -> int | None:
    """1-based line of ``key`` inside the ``index``-th ``[[table]]`` (or ``[table]``; or at the top level)."""
    lines = text.splitlines()
    start, seen = -1, -1
    if table is not None:
        for i, line in enumerate(lines):
            m = _TABLE_LINE.match(line)
            if m and m.group(2).strip("\"'") == table and (m.group(1) == "[[") == (index is not None):
                seen += 1
                if index is None or seen == index:
                    start = i
                    break
        if start < 0:  # an inline table or array: point at the key that holds it
            key, table = table, None
    found = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=") if key is not None else None
    for j in range(start + 1, len(lines)):
        if start >= 0 and _TABLE_LINE.match(lines[j]):
            break
        if found is not None and found.match(lines[j]):
            return j + 1
    return start + 1 if start >= 0 else None


def parse_doc(path: str, text: str) -> _Doc:
    """The document of a schema file named ``path`` holding ``text``. Raises SchemaFileError (with the line) when
    the text is not TOML."""
    toml = _toml()
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise SchemaFileError(path, int(m.group(1)) if m else None, f"not valid TOML: {e}") from None
    except RecursionError:  # arrays or inline tables nested thousands deep: tomllib recurses once per level
        raise SchemaFileError(path, None, "not valid TOML: nested too deeply") from None
    return _Doc(path, text, data)


def _check_fields(doc: _Doc, table: str, entry: Any, index: int | None) -> dict[str, Any]:
    fields = _TABLES[table]
    where = f"[[{table}]] #{index + 1}" if index is not None else f"[{table}]"
    if not isinstance(entry, dict):
        doc.fail(f"{where} must be a table", table, index)
    for k, v in entry.items():
        want = fields.get(k)
        if want is None:
            doc.fail(f"{where}: unknown field {k!r} (known: {', '.join(fields)})", table, index, k)
        elif not isinstance(v, want) or (want is int and isinstance(v, bool)):
            doc.fail(f"{where}: {k} must be {want.__name__}, got {type(v).__name__} {v!r}", table, index, k)
        elif isinstance(v, list) and not all(isinstance(x, str) for x in v):
            doc.fail(f"{where}: {k} must be a list of strings", table, index, k)
    return dict(entry)
