"""Sample: one generation as the viewer shows it, and how the untrusted values of a row become its parts. Pure.

Values come from files and databases a trainer wrote (or anyone did): any JSON value where text or a number is
expected. Text stays raw here (the viewer makes it inert); numbers are read as the ingest reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from steptable.ingest.parse import NONFINITE


@dataclass(frozen=True)
class Sample:
    """One generation: what was asked, what came back, what it scored."""

    step: int
    title: str
    reward: float | None
    prompt: str
    completion: str
    extra: str = ""
    group: str = ""  # samples of one group share it (one prompt's completions); "": in no group


def num(v: Any) -> float | None:
    """A number from a value (the decoder's ``NaN`` / ``Infinity`` spelling too), else None."""
    if isinstance(v, str):  # the decoder's spelling of a bare NaN / Infinity
        return NONFINITE.get(v.lower())
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:  # an integer beyond the double range: infinite, as the decoder reads 1e999
        return math.inf if v > 0 else -math.inf


def short(x: float | None) -> str:
    return "nan" if x is None else f"{x:.4g}"


def text(v: Any) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else str(v)


def chat(v: Any) -> str:
    """A prompt or completion: text, or a conversation (TRL's ``[{role, content}]``) as ``role: content`` lines."""
    if isinstance(v, list) and v and all(isinstance(m, dict) and "content" in m for m in v):
        return "\n".join(f"{text(m.get('role'))}: {text(m.get('content'))}" for m in v)
    return text(v)
