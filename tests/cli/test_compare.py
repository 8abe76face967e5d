"""``steptable compare``: its formats, its JSONL contract, and every bad input it names."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

CONTRACT = {"arm", "metric", "x", "x_from", "x_to", "n_seeds", "n_points", "mean", "lo", "hi", "baseline", "delta",
            "delta_lo", "delta_hi"}


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from steptable.cli.main import main

    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def write_exp(root: Path, steps: int = 400) -> Path:
    rng = random.Random(11)
    for arm, lift, seeds, per_step in (("vanilla", 0.0, 3, 1000), ("routeA", 0.1, 3, 4000), ("absorb", 0.0, 1, 1000)):
        for s in range(1, seeds + 1):
            path = root / (f"{arm}_seed{s}" if seeds > 1 else arm) / "metrics.jsonl"
            path.parent.mkdir(parents=True)
            with open(path, "w") as f:
                for i in range(steps):
                    row = {"step": i, "num_tokens": (i + 1) * per_step, "reward": 0.5 + lift + rng.gauss(0, 0.02),
                           "loss": rng.gauss(1, 0.05) if i % 5 else None}
                    f.write(json.dumps(row) + "\n")
    return root


@pytest.fixture
def exp(tmp_path: Path) -> Path:
    return write_exp(tmp_path / "exp")


def test_text(exp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(["compare", str(exp), "--baseline", "vanilla"], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    # the steps in the window: 359.1-399 holds 360-399 (the 40 points of each row)
    assert lines[0].startswith("baseline vanilla; x step, window steps 360-399 (last 10% of the common range 0-399)")
    assert lines[1] == ("arms: vanilla 3 seeds, absorb 1 seed (interval from the other arms' seed spread), "
                        "routeA 3 seeds")
    reward = [ln for ln in lines if "routeA" in ln and "[" in ln and ln.split()[0] in ("reward", "routeA")]
    assert any(ln.rstrip().endswith("differs") for ln in reward)  # +0.1 with noise 0.02: its interval excludes 0
    assert "missing" in lines[3]  # loss is null on every 5th row


def test_a_sweep_of_many_arms_lists_the_best_and_counts_every_arm(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """30 arms: the table lists the baseline and the 9 arms of the best mean reward (the largest differences for
    loss, which has no direction), a line says so, the verdict lines count all 29 others; --all and jsonl list
    every arm. A sweep of 100 arms was a 41,640-character table for an agent."""
    from steptable.compare.render import ARMS_LISTED

    rng = random.Random(3)
    for k in range(30):
        path = tmp_path / f"lr{k:02d}" / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        with open(path, "w") as f:
            for i in range(200):
                row = {"step": i, "reward": 0.3 + 0.01 * k + rng.gauss(0, 0.002), "loss": 1 + rng.gauss(0, 0.01) * k}
                f.write(json.dumps(row) + "\n")
    (tmp_path / "steptable.toml").write_text('[schema]\nname = "sweep"\n[match]\nkeys = ["reward"]\n'
                                             '[[columns]]\nkey = "reward"\nbetter = "higher"\n')
    rc, out, err = cli(["compare", str(tmp_path), "--baseline", "lr00"], capsys)
    assert rc == 0, err
    reward_arms = []
    metric = None
    for ln in out.splitlines():
        parts = ln.split()
        if parts and parts[0] in ("reward", "loss"):
            metric = parts[0]
            parts = parts[1:]
        if metric == "reward" and parts and parts[0].startswith("lr"):
            reward_arms.append(parts[0])
    assert len(reward_arms) == ARMS_LISTED
    assert reward_arms == ["lr00", *(f"lr{k:02d}" for k in range(21, 30))]  # the baseline and the 9 best, in order
    assert f"the {ARMS_LISTED - 1} arms of the best means of 30" in out
    assert out.splitlines()[1] == "arms: 30, each of 1 seed (interval from 10 batch means)"
    assert "against lr00: 28 better, 1 no interval; one seed each" in out  # every arm counted (lr21 drifts)
    rc, every, _ = cli(["compare", str(tmp_path), "--baseline", "lr00", "--all"], capsys)
    assert all(f"lr{k:02d}" in every for k in range(30)) and "best means of" not in every
    rc, jsonl, _ = cli(["compare", str(tmp_path), "--baseline", "lr00", "--format", "jsonl"], capsys)
    assert len(jsonl.splitlines()) == 60


def test_a_run_logging_none_of_the_metrics_does_not_end_the_window(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A run beside the arms that logs other keys (a W&B copy's ``train/reward``) ended the common range at its
    last step, the window with it (and a window past it was refused), without a point in it: it is left out, named."""
    for arm, steps, key in (("vanilla", 400, "reward"), ("routeA", 400, "reward"), ("wandb_copy", 100, "train/reward")):
        path = tmp_path / arm / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps({"step": i, key: 0.5 + i / 1000}) + "\n" for i in range(steps)))
    rc, out, err = cli(["compare", str(tmp_path), "--baseline", "vanilla"], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("baseline vanilla; x step, window steps 360-399 (last 10% of the common range 0-399)")
    assert lines[2] == "left out, logging none of the metrics: wandb_copy"
    rc, out, err = cli(["compare", str(tmp_path), "--baseline", "vanilla", "--window", "300:399"], capsys)
    assert rc == 0, err
    rc, out, err = cli(["compare", str(tmp_path), "--baseline", "wandb_copy", "--metrics", "reward"], capsys)
    assert rc == 2 and "the baseline 'wandb_copy' logs none of the metrics compared (reward)" in err


def test_jsonl_contract(exp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(["compare", str(exp), "--baseline", "vanilla", "--x", "tokens", "--format", "jsonl",
                      "--metrics", "rew*,loss"], capsys)
    assert rc == 0
    recs = [json.loads(line) for line in out.splitlines()]
    assert [(r["metric"], r["arm"]) for r in recs] == [(m, a) for m in ("reward", "loss")
                                                       for a in ("vanilla", "absorb", "routeA")]
    for r in recs:
        assert CONTRACT <= r.keys()
        assert r["x"] == "tokens" and r["baseline"] == "vanilla"
        assert (r["x_from"], r["x_to"]) == pytest.approx((400_000 - 0.1 * (400_000 - 4000), 400_000))
        if r["arm"] == "vanilla":
            assert r["delta"] is None and r["delta_lo"] is None and r["delta_hi"] is None
        else:
            assert r["delta_lo"] <= r["delta"] <= r["delta_hi"]
    routeA = next(r for r in recs if r["arm"] == "routeA" and r["metric"] == "reward")
    vanilla = next(r for r in recs if r["arm"] == "vanilla" and r["metric"] == "reward")
    assert vanilla["n_points"] == 3 * 40  # the last 39,600 tokens: 40 steps at 1,000 a step
    assert routeA["n_seeds"] == 3 and routeA["n_points"] == 3 * 10  # ... 10 at 4,000
    assert routeA["delta_lo"] > 0


def test_md(exp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(["compare", str(exp), "--format", "md", "--metrics", "reward"], capsys)
    assert rc == 0
    table = [ln for ln in out.splitlines() if ln.startswith("|")]
    assert table[0].startswith("| metric | arm | n | points |") and table[1].startswith("| --- | --- | --: |")
    assert len(table) == 2 + 3
    assert out.startswith("baseline absorb;")  # no --baseline: the first arm


def test_group_pattern(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("base_run1", "base_run2", "new_run1", "new_run2"):
        p = tmp_path / "e" / name / "metrics.jsonl"
        p.parent.mkdir(parents=True)
        p.write_text("".join(json.dumps({"step": i, "m": float(i % 3)}) + "\n" for i in range(50)))
    rc, out, _ = cli(["compare", str(tmp_path / "e"), "--baseline", "base", "--group", r"_run\d+", "--format",
                      "jsonl"], capsys)
    assert rc == 0
    assert [(r["arm"], r["n_seeds"]) for r in map(json.loads, out.splitlines())] == [("base", 2), ("new", 2)]


@pytest.mark.parametrize(("args", "message"), [
    (["--baseline", "nope"], "no arm 'nope' (arms: absorb, routeA, vanilla)"),
    (["--baseline", "vanilla", "--window", "0:1000"],
     "7 runs of the arms end before the window does (at step 1000): vanilla_seed1 at 399"),
    (["--window", "bad"], "window 'bad'"),
    (["--x", "samples"], "arm 'absorb' (absorb): no numeric any of samples"),
    (["--metrics", "nothing*"], "--metrics 'nothing*' matches no numeric key"),
    (["--group", "("], "--group '('"),
])
def test_bad_inputs(exp: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    rc, out, err = cli(["compare", str(exp), *args], capsys)
    assert rc == 2 and out == ""
    assert message in err


def test_an_unknown_baseline_in_a_sweep_names_the_closest_arms_not_all(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A baseline none of 60 arms is (a sweep whose run names hold more than a seed part): the error named every arm
    (300 of them: 6,277 characters to an agent); now the closest names and how many arms there are, as tail's
    unknown --run."""
    for i in range(60):
        p = tmp_path / f"lr1e-06_seed{i}_r{i}" / "metrics.jsonl"
        p.parent.mkdir(parents=True)
        p.write_text("".join(json.dumps({"step": s, "m": float(s % 3)}) + "\n" for s in range(5)))
    rc, out, err = cli(["compare", str(tmp_path), "--baseline", "lr1e-06"], capsys)
    assert rc == 2 and out == ""
    assert err.startswith("steptable compare: no arm 'lr1e-06' (closest: lr1e-06_seed"), err
    assert err.endswith("; 60 arms (steptable runs lists them))\n") and err.count("lr1e-06_seed") == 3, err


def test_missing_path_and_nothing_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(["compare", str(tmp_path / "nope")], capsys)
    assert rc == 2 and "no such path" in err
    (tmp_path / "empty").mkdir()
    rc, _, err = cli(["compare", str(tmp_path / "empty")], capsys)
    assert rc == 2 and err.startswith("steptable compare: ")


def test_hostile_names_are_sanitized(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "e" / "a" / "metrics.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text("".join(json.dumps({"step": i, "\x1b[31mred": 1.0}) + "\n" for i in range(20)))
    rc, out, _ = cli(["compare", str(tmp_path / "e")], capsys)
    assert rc == 0 and "\x1b" not in out


def test_settings_from_steptable_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A [compare] table (alone in the file: no schema) sets group, x and baseline; the command line wins."""
    for name in ("old_r1", "old_r2", "new_r1", "new_r2"):
        p = tmp_path / "e" / name / "metrics.jsonl"
        p.parent.mkdir(parents=True)
        per = 4 if name.startswith("new") else 1
        p.write_text("".join(json.dumps({"step": i, "samples": per, "reward": float(i % 3)}) + "\n"
                             for i in range(100)))
    (tmp_path / "e" / "steptable.toml").write_text('[compare]\ngroup = "_r[0-9]+$"\nx = "samples"\nbaseline = "old"\n')
    rc, out, err = cli(["compare", str(tmp_path / "e"), "--format", "jsonl"], capsys)
    assert rc == 0, err
    recs = [json.loads(line) for line in out.splitlines()]
    assert [(r["arm"], r["n_seeds"], r["x"], r["baseline"]) for r in recs] == [("old", 2, "samples", "old"),
                                                                               ("new", 2, "samples", "old")]
    rc, out, _ = cli(["compare", str(tmp_path / "e"), "--format", "jsonl", "--x", "step", "--baseline", "new",
                      "--metrics", "reward"], capsys)
    assert [(r["arm"], r["x"]) for r in map(json.loads, out.splitlines())] == [("new", "step"), ("old", "step")]
    rc, out, err = cli(["summary", str(tmp_path / "e")], capsys)  # the file is no schema: no warning, seeds grouped
    assert rc == 0 and "steptable.toml" not in err
    lines = out.splitlines()
    reward = lines[lines.index("Δ vs old (95% CI), steps 90-99:") + 1]
    assert reward.startswith("reward best old: new ")  # the group's name; equal rewards: the baseline is best


@pytest.mark.parametrize(("toml", "message"), [
    ('[compare]\ngroup = "("\n', "steptable.toml:2: [compare] group: not a regular expression"),
    ("[compare]\ncolour = 1\n", "steptable.toml:2: [compare]: unknown field 'colour'"),
    ("[compare]\nx = 3\n", "steptable.toml:2: [compare]: x must be str"),
])
def test_bad_settings_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], toml: str, message: str) -> None:
    exp = write_exp(tmp_path / "e", steps=50)
    (exp / "steptable.toml").write_text(toml)
    rc, out, err = cli(["compare", str(exp)], capsys)
    assert rc == 2 and out == "" and message in err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli(["compare", "--help"], capsys)
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # (wrapped to the terminal's width)
    assert "--baseline" in out and "%%" not in out and "last 10% of the x range" in out


def test_a_huge_metric_name_pads_no_other_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A key of 200 000 characters among 30 metrics: its own line carries it, the other lines are padded to at
    most MAX_WIDTH cells (padded to the key, the text was 30 metrics x 2 arms x 200 000 = 12 MB)."""
    from steptable.table.columns import MAX_WIDTH

    huge = "k" * 200_000
    for arm, lift in (("a", 0.0), ("b", 0.1)):
        path = tmp_path / arm / "metrics.jsonl"
        path.parent.mkdir(parents=True)
        with open(path, "w") as f:
            for i in range(50):
                f.write(json.dumps({"step": i, "loss": 1 / (i + 1) + lift, huge: i * 0.5,
                                    **{f"m{j}": j + i * 0.01 for j in range(30)}}) + "\n")
    rc, out, _ = cli(["compare", str(tmp_path), "--baseline", "a"], capsys)
    assert rc == 0
    lines = out.splitlines()
    assert sum(huge in line for line in lines) == 1  # the name once, whole
    assert max(len(line) for line in lines if huge not in line) <= 2 * MAX_WIDTH
    assert len(out) < 2 * len(huge)


def test_add_scalars_curves_are_compared_between_arms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two seeds of two arms written by torch's SummaryWriter, the losses with ``add_scalars`` (a directory per curve
    inside each run's): four runs of two arms, each curve a metric compared between them (not an arm of its own
    that pools both arms' curves as its seeds)."""
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    for arm, lift in (("vanilla", 0.0), ("routeA", 0.5)):
        for seed in (1, 2):
            w = SummaryWriter(str(tmp_path / f"{arm}_seed{seed}"))
            for s in range(40):
                w.add_scalars("loss", {"train": 1.0 + lift + 0.01 * seed, "val": 2.0}, s)
                w.add_scalar("reward", 0.5, s)
            w.close()
    rc, out, err = cli(["compare", str(tmp_path), "--baseline", "vanilla", "--format", "jsonl"], capsys)
    assert rc == 0, err
    recs = [json.loads(line) for line in out.splitlines()]
    assert {r["arm"] for r in recs} == {"vanilla", "routeA"} and {r["n_seeds"] for r in recs} == {2}
    train = next(r for r in recs if r["metric"] == "loss/train" and r["arm"] == "routeA")
    assert train["delta"] == pytest.approx(0.5)
    assert {r["metric"] for r in recs} == {"loss/train", "loss/val", "reward"}




def _metrics(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    rc, out, err = cli(["compare", *argv, "--format", "jsonl"], capsys)
    assert rc == 0, err
    return list(dict.fromkeys(json.loads(line)["metric"] for line in out.splitlines()))


def test_keys_a_schema_keeps_out_of_its_table_are_compared_when_named(trl_wandb_run: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A GRPOTrainer's W&B run: its seven profiling timings and the per-process clip extrema, which its table leaves
    out, are out of the comparison too; ``--metrics`` names them."""
    shown = _metrics([str(trl_wandb_run / "wandb")], capsys)
    assert shown[:2] == ["train/loss", "train/reward"] and "train/step_time" in shown, shown
    assert not any(m.startswith("profiling/") or m.endswith(("/low_min", "/high_max")) for m in shown), shown
    named = _metrics([str(trl_wandb_run / "wandb"), "--metrics", "profiling/*"], capsys)
    assert len(named) == 7 and all(m.startswith("profiling/Time taken: GRPOTrainer.") for m in named), named


def test_a_loggers_dump_only_columns_are_compared(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The routing arms' timings are printed to table.txt, not to the console: declared, they are metrics still."""
    shown = _metrics([str(demo_dir), "--baseline", "vanilla"], capsys)
    assert {"gen", "fb", "t_rew", "sec", "rew", "loss"} <= set(shown), shown


def test_fractions_are_compared_as_rates(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The routing arms log their hack and pass counts as ``[n, total]`` pairs (``hack_s``: the number to watch):
    they are compared as the rates n/total, each arm's mean the mean of its rows' rates in the window."""
    rc, out, err = cli(["compare", str(demo_dir), "--baseline", "vanilla", "--format", "jsonl"], capsys)
    got = {(r["arm"], r["metric"]): r for line in out.splitlines() if (r := json.loads(line))}
    assert rc == 0 and {"hack_s", "gt_s", "hack_t", "gt_t"} <= {m for _, m in got}, (sorted(got), err)
    row = got[("routeA", "hack_s")]
    rates = []
    for line in (demo_dir / "routeA" / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        if row["x_from"] <= r["step"] <= row["x_to"] and r.get("hack_s"):
            rates.append(r["hack_s"][0] / r["hack_s"][1])
    assert row["n_points"] == len(rates) > 0 and row["mean"] == pytest.approx(sum(rates) / len(rates))
    assert got[("vanilla", "hack_s")]["delta"] is None and got[("routeA", "hack_s")]["delta"] is not None
