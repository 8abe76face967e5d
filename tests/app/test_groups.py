"""The generations viewer groups a step's samples by prompt (GRPO's groups), shows each group's rewards and marks
groups whose rewards are all equal; verl's dumps and TRL's completions are read as samples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from steptable.app.groups import Group, grouped, groups_of
from steptable.app.screens.generations import sample_text
from steptable.app.sidefiles import Sample, build_index, side_paths
from steptable.ingest.files.discover import discover
from tests.ingest.dumpwriters import write_verl_dumps
from tests.trainer_logs import write_verl


def _s(group: str, reward: float | None, completion: str = "c") -> Sample:
    return Sample(1, "generation", reward, group, completion, "", group)


def test_flat_groups_are_the_ones_with_equal_known_rewards() -> None:
    assert Group(1, (1.0, 1.0, 1.0)).flat and Group(1, (0.0, 0.0)).flat
    assert not Group(1, (1.0, 0.0)).flat and not Group(1, (1.0,)).flat
    assert not Group(1, (float("nan"), float("nan"))).flat and not Group(1, (None, None)).flat


def test_grouped_keeps_first_appearance_order_and_ungrouped_samples() -> None:
    samples = [_s("a", 1.0, "a1"), _s("b", 0.0, "b1"), _s("a", 1.0, "a2"), _s("", None, "x"), _s("b", 1.0, "b2")]
    assert [s.completion for s in grouped(samples)] == ["a1", "a2", "b1", "b2", "x"]
    g = groups_of(samples)
    assert g["a"] == Group(1, (1.0, 1.0)) and g["b"] == Group(2, (0.0, 1.0)) and "" not in g


def test_viewer_text_shows_each_groups_prompt_once_rewards_and_the_mark() -> None:
    samples = grouped([_s("2+2?", 1.0), _s("3+3?", 0.0), _s("2+2?", 1.0), _s("3+3?", 1.0)])
    text = sample_text(samples, "arm", 1)[0].plain
    assert "4 samples · 2 groups, 1 with all rewards equal (no learning signal)" in text
    assert "group 1/2 · 2 samples · rewards +1 +1 · all equal: no learning signal" in text
    assert "group 2/2 · 2 samples · rewards +0 +1\n" in text
    assert text.count("prompt: 2+2?") == 1 and text.count("prompt: 3+3?") == 1


def test_a_page_that_starts_inside_a_group_repeats_its_header() -> None:
    samples = [_s("q", float(i % 2), "\n".join(["y"] * 400)) for i in range(16)]
    _, nxt = sample_text(samples, "arm", 1)
    assert nxt is not None
    text = sample_text(samples, "arm", 1, nxt)[0].plain
    assert "group 1/1 · 16 samples" in text and "prompt: q" in text


def test_verl_rollouts_and_validation_read_as_samples_in_groups(tmp_path: Path) -> None:
    write_verl(tmp_path / "exp" / "exp.jsonl", steps=3)
    write_verl_dumps(tmp_path / "exp", range(1, 4))
    (cand,) = discover([tmp_path])
    idx = build_index(side_paths(cand.side_files))
    assert idx.steps == [1, 2, 3]
    samples = grouped(idx.samples(1))
    rollouts = [s for s in samples if s.title == "rollouts"]
    assert len(rollouts) == 12 and len([s for s in samples if s.title == "val"]) == 2
    first = rollouts[0]
    assert first.prompt == "question 0 at 1?" and first.completion == "answer 0" and first.reward == 1.0
    assert "answer 0" in first.extra and "acc 1" in first.extra and "too_short" not in first.extra
    groups = groups_of(samples)
    assert [g.flat for g in groups.values()] == [True, False, False, False]  # (the validation group: 0 and 1)
    assert groups["question 1 at 1?"].rewards == (0.0, 1.0, 0.0, 1.0)


def test_trl_completions_read_as_samples_rewards_summed(trl_run: Path) -> None:
    pytest.importorskip("pyarrow")
    paths = sorted((trl_run / "completions").glob("*.parquet"))
    idx = build_index(paths)
    assert idx.steps == [1, 2]
    samples = idx.samples(2)
    assert len(samples) == 4
    for s in samples:
        assert s.group == s.prompt and s.prompt.startswith("w")
        assert s.reward == pytest.approx(len(s.completion) + 1.0)  # length_reward + constant_reward
        assert "length_reward" in s.extra and "constant_reward 1" in s.extra and "advantage" in s.extra
    assert len(groups_of(samples)) == 2 and all(len(g.rewards) == 2 for g in groups_of(samples).values())


def test_damaged_parquet_is_one_sample_that_says_so(trl_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "completions" / "completions_00001.parquet"
    path.parent.mkdir()
    shutil.copy(trl_run / "completions" / path.name, path)
    path.write_bytes(path.read_bytes()[:200])
    (s,) = build_index([path]).samples(1)
    assert "not a readable parquet file" in s.title and s.reward is None


def test_without_pyarrow_a_hint_names_the_extra(trl_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # (import fails as when it is not installed)
    (s,) = build_index([trl_run / "completions" / "completions_00001.parquet"]).samples(1)[:1]
    assert "steptable[parquet]" in s.title


def test_damaged_verl_dump_keeps_its_good_rows(tmp_path: Path) -> None:
    write_verl_dumps(tmp_path, range(5, 6))
    path = tmp_path / "rollouts" / "5.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3][: len(lines[3]) // 2]  # (a row cut in the middle)
    path.write_bytes(b"\n".join(lines))
    samples = build_index([path]).samples(5)
    assert len(samples) == 12
    assert [i for i, s in enumerate(samples) if "bad line" in s.title] == [3]
    assert [s.completion for s in samples if s.reward is not None][:4] == ["answer 0", "answer 1", "answer 2",
                                                                         "answer 4"]


def test_prompts_asked_once_show_no_groups() -> None:
    text = sample_text([_s("a", 1.0), _s("b", 0.0)], "arm", 1)[0].plain
    assert "group" not in text and "prompt: a" in text and "prompt: b" in text
