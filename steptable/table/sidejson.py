"""Side files (a run's ``config.json``, a StepLogger's ``steptable.json``) decoded as the untrusted input they are.
Pure.

A kilobyte of ``[`` is enough to make a recursive decoder raise RecursionError, and anything that walks the decoded
value afterwards (rendering a config, comparing it) recurses as deep again. So the nesting is measured first, in one
linear scan that never recurses, and a document nested deeper than any real config is refused with a reason.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

#: deeper than any real config (a Hydra config nests a handful of levels), far below the recursion limit
MAX_DEPTH: Final = 64

# a string (skipped whole, closed or running to the end), or a run of openers, or a run of closers
_SCAN: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{][\s\[{]*|[\]}][\s\]}]*', re.DOTALL)


class SideFileError(ValueError):
    """A side file refused; ``str()`` is the reason, without the file's name (the caller names the file)."""


def depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text ``data`` (brackets inside strings do not count)."""
    level = deepest = 0
    for m in _SCAN.finditer(data):
        tok = m.group()
        first = tok[0]
        if first == 0x22:  # '"'
            continue
        n = tok.count(b"[") + tok.count(b"{") if first in (0x5B, 0x7B) else -(tok.count(b"]") + tok.count(b"}"))
        level += n
        deepest = max(deepest, level)
    return deepest


def load(data: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``data``. Raises SideFileError: nested deeper than ``max_depth``, or not JSON (a number past
    Python's 4,300-digit limit included)."""
    if (d := depth(data)) > max_depth:
        raise SideFileError(f"JSON nested {d} deep (more than {max_depth}): not read")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        raise SideFileError(f"not valid JSON ({str(e)[:120]})") from None
