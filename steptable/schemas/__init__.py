"""Declarative column sets for the trainers steptable reads, and their detection.

    schema = detect(path, keys, users)           # best-fitting user or built-in schema; "generic" otherwise
    cols = layout(runs, schema, max_width=80)    # one layout for all runs shown together
    for row in rows:
        line = render.row(cols, schema.derive(row))   # derive() adds derived and aliased values

Built-ins: routing, retrain, verl, tinyzero, tinker, trl, maxent-grpo, generic. User schemas: TOML files
(``steptable.schemas.user`` builds them; ``steptable.schemafiles`` finds and reads the files). ``side_file(path)``
says which files hold no step rows.
"""

from __future__ import annotations

from steptable.schemas.arrange import (
    auto_col,
    fit,
    hidden_keys,
    informative,
    layout,
    own_step_keys,
    run_keys,
    sample_values,
    step_key_of,
    steps_outgrown,
)
from steptable.schemas.base import (
    META_KEYS,
    STEP_KEYS,
    Derived,
    Rule,
    RunView,
    Schema,
    SideFile,
    derive_rows,
    ratio_pair,
)
from steptable.schemas.headers import short_header, short_headers
from steptable.schemas.legend import legend_for
from steptable.schemas.registry import GENERIC, ROUTING, SCHEMAS, side_file
from steptable.schemas.routing import routing_columns
from steptable.schemas.user import SchemaFileError
from steptable.schemas.widths import cells_outgrown, first_look, notation_left, noted, widened

__all__ = [
    "GENERIC",
    "META_KEYS",
    "ROUTING",
    "SCHEMAS",
    "STEP_KEYS",
    "Derived",
    "Rule",
    "RunView",
    "Schema",
    "SchemaFileError",
    "SideFile",
    "auto_col",
    "cells_outgrown",
    "derive_rows",
    "first_look",
    "fit",
    "hidden_keys",
    "informative",
    "layout",
    "legend_for",
    "notation_left",
    "noted",
    "own_step_keys",
    "ratio_pair",
    "routing_columns",
    "run_keys",
    "sample_values",
    "short_header",
    "short_headers",
    "side_file",
    "step_key_of",
    "steps_outgrown",
    "widened",
]
