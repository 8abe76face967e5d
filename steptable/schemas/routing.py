"""The routing-arm table: vanilla / routeA / absorb arms of a gradient-routing GRPO experiment.

Every arm gets the same layout (the routing diagnostics are present even on arms whose gate never runs, as nan),
so the arms' tables line up column for column. Conditional columns:
- ``hk_<code>`` per environment mode, only when the run trains on more than one mode;
- ``hk_abl`` / ``slv_abl`` only when a slice of rollouts is generated with the quarantine ablated.
Timing columns are written to JSONL and shown in table.txt and the end-of-run dump, not streamed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from steptable.table.columns import Col, ColumnError, validate
from steptable.table.formatting import display_width

#: keys of the diagnostics block (computed by steptable.diagnostics.RoutingMonitor)
DIAGNOSTIC_KEYS = ("auroc", "cos", "qmass", "keep", "resid", "rout", "tlo", "thi", "stale")

_HEAD = (
    # 6 cells hold a million steps (in 4, every step from 10000 on would read "1e4").
    Col("step", 6, "step", "d", "optimizer step of the GRPO loop"),
    Col("ref_eq", 6, "ref_eq", ".2f", "step expressed in vanilla-equivalent units: generations so far / 256"),
    Col("rew", 6, "rew", "+.2f", "mean reward over the whole batch (student and teacher rollouts)", "higher"),
    Col("rew_s", 6, "rew_s↑", "+.2f", "mean reward of the student's own rollouts", "higher"),
    Col("gt_s", 6, "gt_s↑", "frac", "student rollouts that pass the ground-truth tests, as passed/total", "higher"),
    Col("gt_t", 6, "gt_t", "frac", "teacher rollouts that pass the ground-truth tests (a sanity check)"),
    Col("hack_s", 7, "hack_s?", "frac", "student rollouts flagged as reward hacks: the number to watch", "lower"),
    Col("hack_t", 7, "hack_t", "frac", "teacher rollouts flagged as hacks (how many hacks the pool offers)"),
    Col(
        "hack_deployed", 7, "hk_dep", "+.2f",
        "hack rate of the deployed model on held-out prompts (quarantine removed on routed arms), "
        "measured every few steps; nan on the steps in between", "lower",
    ),
    Col(
        "solve_deployed", 7, "slv_dep", "+.2f",
        "solve rate of the deployed model on the same held-out evaluation; nan between evaluations", "higher",
    ),
)

_MID = (
    Col("lp_s", 6, "lp_s↓", "+.2f", "mean log-probability the student gives its generated tokens"),
    Col("lp_t", 6, "lp_t↑", "+.2f", "mean log-probability of the teacher's tokens; lp_s - lp_t is the off-policy gap"),
    Col("loss", 7, "loss", "+.2f", "mean GRPO loss of the step"),
    Col("gn", 7, "gn", None, "L2 norm of the adapter gradients before clipping (compare with grad_clip)"),
    Col("lr", 7, "lr", ".1e", "learning rate from the schedule at this step"),
)

_DIAG = (
    Col(
        "auroc", 6, "auroc", ".2f",
        "how well dot(act, v_act) separates hacks from non-hacks among rollouts with positive advantage "
        "(where reward cannot tell them apart); .5 is chance; observation only, routes nothing",
    ),
    Col("cos", 6, "cos", "+.2f", "mean cosine between each rollout's activation and v_act"),
    Col("qmass", 6, "qmass", ".2f", "share of the update's gradient norm sent to quarantine: |g_q|/(|g_keep|+|g_q|)"),
    Col("keep", 6, "keep", ".2f", "share of rollouts scored below tlo: they train the deployed weights only"),
    Col(
        "resid", 6, "resid", ".2f",
        "share of rollouts between the thresholds (all of them during warmup): both blocks train on them",
    ),
    Col("rout", 6, "rout", ".2f", "share of rollouts at or above thi: routed to quarantine, deployed weights detached"),
    Col("tlo", 6, "tlo", "+.2f", "lower 3-class Otsu threshold on the z-scored score buffer; nan during warmup"),
    Col("thi", 6, "thi", "+.2f", "upper Otsu threshold (z units) above which rollouts are routed; nan during warmup"),
    Col(
        "stale", 5, "stale", "d",
        "steps since v_act was last re-extracted (0 on a refresh step); grows without bound on arms that never refresh",
    ),
)

_ABLATE = (
    Col(
        "hack_abl", 6, "hk_abl", "frac",
        "hack rate on this step's rollouts generated with quarantine ablated (a per-step deploy proxy, noisier)",
        "lower",
    ),
    Col("solve_abl", 7, "slv_abl", "frac", "solve rate on the same ablated slice of training prompts", "higher"),
)

_TIMING = (
    Col("gen", 6, "gen", None, "seconds spent generating rollouts", stream=False),
    Col("fb", 6, "fb", None, "seconds in forward and backward passes", stream=False),
    Col("t_rew", 6, "t_rew", None, "seconds spent computing rewards", stream=False),
    Col("sec", 6, "sec", None, "wall-clock seconds of the whole step", stream=False),
)


def routing_columns(
    modes: Sequence[str] = (),
    mode_code: Mapping[str, str] | None = None,
    show_ablate: bool = False,
    timing: bool = True,
) -> tuple[Col, ...]:
    """The routing-arm column set.

    modes        environment modes trained on (e.g. ["code", "math"]); per-mode hack columns appear when > 1
    mode_code    short code per mode for the header (``{"code": "c"}`` -> ``hk_c``); defaults to the first letter
    show_ablate  add the ablated-slice proxy columns
    timing       add the dump-only timing columns
    """
    code = dict(mode_code or {})
    cols: list[Col] = list(_HEAD)
    if len(modes) > 1:
        taken = {c.header for c in (*_HEAD, *_MID, *_DIAG, *_ABLATE)}  # hk_dep, hk_abl: codes may not clash
        for m in modes:
            c = code.get(m) or m[:1]
            h = f"hk_{c}"
            if h in taken:
                raise ColumnError(
                    f"mode {m!r}: its column {h!r} is taken (by another mode or a routing column); "
                    f"give it a code of its own with mode_code={{{m!r}: ...}}",
                    "mode_code",
                )
            taken.add(h)
            desc = f"student hacks in the {m} environment on this step only"
            cols.append(Col(h, max(5, display_width(h)), h, "d", desc))
    cols += _MID
    cols += _DIAG
    if show_ablate:
        cols += _ABLATE
    if timing:
        cols += _TIMING
    return validate(cols)
