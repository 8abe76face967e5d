"""generic: any other JSONL (or CSV, console) run. Nothing is declared; ``layout`` builds the columns from the data.

The step comes first (``step``, or the first of ``base.STEP_KEYS`` the file has); then every other key ranked by how
much it tells (present on most rows, varying, numeric before text), with prefix-aware short headers and widths taken
from the data; ``max_width`` keeps the leading ones that fit. Every key stays reachable by a column filter
(``layout(..., patterns=[...])``).
"""

from __future__ import annotations

from steptable.schemas.base import Schema

SCHEMA = Schema("generic", (), "any JSONL: columns chosen from the data")
