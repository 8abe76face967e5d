"""Sample: one generation as the viewer shows it, and how an untrusted row (of a side file, a table) becomes one
(:func:`to_sample`: the shape of each trainer's rows). Pure.

Values come from files and databases a trainer wrote (or anyone did): any JSON value where text or a number is
expected. Text stays raw here (the viewer makes it inert); numbers are read as the ingest reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
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


_TEXT_KEYS = frozenset({"step", "prompt", "completion", "reward", "reward_total"})


#: columns of a verl dump or a TRL completions row that are no extra information
_DUMP_TEXT = frozenset({"input", "output", "score", "step", "prompt", "completion", "advantage", "gts"})


def _numbers(obj: dict[str, Any]) -> list[tuple[str, float]]:
    return [(k, x) for k, v in obj.items() if k not in _DUMP_TEXT and (x := num(v)) is not None]


def to_sample(step: int, obj: dict[str, Any], path: Path) -> Sample:
    if "input" in obj and "output" in obj:  # verl's rollout dump: titled by its directory (rollouts, validation)
        bits = [f"{k} {short(x)}" for k, x in _numbers(obj)[:8]]
        if obj.get("gts") is not None:
            bits.insert(0, f"answer {text(obj.get('gts'))[:200]}")
        prompt = text(obj.get("input"))
        return Sample(step, path.parent.name, num(obj.get("score")), prompt, text(obj.get("output")),
                      " · ".join(bits), prompt)
    if "completion" in obj and "reward" not in obj and (path.suffix == ".parquet" or "advantage" in obj):
        # TRL's completions (its parquet, or the wandb.Table it logs): one column per reward function
        rewards = _numbers(obj)
        total = sum(x for _, x in rewards) if rewards else None
        bits = [f"{k} {short(x)}" for k, x in rewards[:8]]
        if (adv := num(obj.get("advantage"))) is not None:
            bits.append(f"advantage {short(adv)}")
        prompt = chat(obj.get("prompt"))
        return Sample(step, "completion", total, prompt, chat(obj.get("completion")), " · ".join(bits), prompt)
    if "completion" in obj or "prompt" in obj:
        bits = []
        if "reward" not in obj and "reward_total" in obj:  # a rich_completions row: its numbers say where it ranks
            obj = {**obj, "reward": obj["reward_total"]}
        # (its other numbers: a rich_completions row's parts, a table's own score column)
        shown = [(k, v) for k, v in obj.items() if k not in _TEXT_KEYS and k != "num_tokens" and num(v) is not None]
        bits += [f"{k} {short(num(v))}" for k, v in shown[:8]]
        if obj.get("num_tokens") is not None:
            bits.append(f"{text(obj.get('num_tokens'))} tokens")
        tops = obj.get("top_surprisal_tokens")
        if isinstance(tops, list) and tops:
            toks = [t for t in tops[:5] if isinstance(t, dict)]
            bits.append("surprising: " + ", ".join(f"{text(t.get('token'))!r}" for t in toks))
        prompt = text(obj.get("prompt"))
        return Sample(step, "generation", num(obj.get("reward")), prompt, text(obj.get("completion")),
                      " · ".join(bits), prompt)
    if "total_reward" in obj or "steps" in obj:
        title = f"{text(obj.get('split') or 'rollout')} group {text(obj.get('group_idx'))} " \
                f"traj {text(obj.get('traj_idx'))}"
        lines = []
        steps = obj.get("steps")
        for st in steps if isinstance(steps, list) else ():
            if not isinstance(st, dict):
                continue
            r = num(st.get("reward"))
            rs = "nan" if r is None or math.isnan(r) else f"{r:g}"
            lines.append(f"turn {text(st.get('step_idx'))}: observation {text(st.get('ob_len'))} tok, "
                         f"action {text(st.get('ac_len'))} tok, reward {rs}")
            logs = st.get("logs")
            if isinstance(logs, dict):
                lines.extend(f"  {text(k)}: {text(v)}" for k, v in logs.items())
        metrics = obj.get("trajectory_metrics")
        extra = ", ".join(f"{k}={text(v)}" for k, v in metrics.items()) if isinstance(metrics, dict) else ""
        group = f"{text(obj.get('split') or 'rollout')} group {text(obj.get('group_idx'))}" \
            if obj.get("group_idx") is not None else ""
        return Sample(step, title, num(obj.get("total_reward")), "", "\n".join(lines), extra, group)
    return Sample(step, path.name, num(obj.get("reward")), "", "\n".join(f"{k}: {text(v)}" for k, v in obj.items()))


def sample_or_error(step: int, obj: dict[str, Any], path: Path, where: str) -> Sample:
    """``to_sample``, or an error sample for a row whose values it cannot show: one hostile row of a side file must
    not take the viewer (and the app) down."""
    try:
        return to_sample(step, obj, path)
    except Exception as e:  # (values are untrusted; each known hostile shape is handled in to_sample)
        return Sample(step, f"{path.name}: {where} not shown", None, "", f"{type(e).__name__}: {e}"[:500])
